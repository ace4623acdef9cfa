/**
 * Where a server's objects (uploads, task inputs, outputs) live when processes share no directory:
 * an S3-compatible bucket (`--storage s3://bucket/prefix`). Keys are relative to the prefix and use the same
 * layout as the data directory (`uploads/<id>/…`, `tasks/<id>/inputs/<i>`, `tasks/<id>/outputs/<name>`), so a
 * record's `path` is also its key. The engine still works on local files: a worker downloads a task's
 * inputs before it runs and uploads its outputs before the task is PROCESSED.
 *
 * This module has no SDK import; `openObjectStore` (openObjectStore.ts) loads the S3 implementation only when it is
 * asked for.
 */
import { catalogMessage, CrispError, hasErrorCode } from '../../contract/errorCatalog.js';

export interface S3Location {
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
  /** An S3-compatible service (MinIO, Ceph, R2…): path-style requests to this origin. Absent: AWS. */
  endpoint?: string;
  region?: string;
}

export interface CompletedPartRef {
  PartNumber: number;
  ETag: string;
}

export interface ObjectStore {
  /** `s3://bucket/prefix`, for messages and logs. */
  readonly description: string;
  /** Uploads a local file to `key` (one PUT; Crisp's files are at most a few hundred MiB). */
  upload(key: string, file: string, contentType?: string): Promise<void>;
  /** Downloads `key` to `file` (written under a temp name, then renamed: never half a file). */
  download(key: string, file: string): Promise<void>;
  /** Size of the object, or undefined when there is none. */
  head(key: string): Promise<{ size: number } | undefined>;
  /** The first `length` bytes of the object. */
  readStart(key: string, length: number): Promise<Uint8Array>;
  putJson(key: string, value: unknown): Promise<void>;
  getJson<T>(key: string): Promise<T | undefined>;
  /** Keys under a prefix (relative, as given to the other methods). */
  list(prefix: string): Promise<string[]>;
  /** Keys under a prefix with when each was last written (ms since the epoch). */
  listDated(prefix: string): Promise<{ key: string; lastModified: number }[]>;
  /** Removes every object under a prefix. */
  removePrefix(prefix: string): Promise<void>;
  /** A presigned GET that downloads the object as `fileName` with `contentType`. */
  presignGet(key: string, opts: { fileName: string; contentType: string; expiresInSeconds: number }): Promise<string>;
  /** Starts a multipart upload; answers the bucket's upload id. */
  createMultipart(key: string, contentType: string): Promise<string>;
  /**
   * A presigned PUT for one part of exactly `length` bytes (content-length is signed: the bucket refuses any
   * other size). The client sends it straight to the bucket; the bucket answers the ETag.
   */
  presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    length: number,
    expiresInSeconds: number,
  ): Promise<string>;
  /** Joins the parts; the bucket checks each ETag and refuses parts under its minimum size. */
  completeMultipart(key: string, uploadId: string, parts: CompletedPartRef[]): Promise<void>;
  abortMultipart(key: string, uploadId: string): Promise<void>;
  /** Throws when the bucket cannot be reached with these credentials (readiness). */
  ping(): Promise<void>;
  close(): void;
}

/**
 * An error the bucket answered (`s3Code`: the S3 error code such as InvalidPart), as opposed to a transport
 * failure. Its catalog row is storage-failed.
 */
export class ObjectStoreError extends CrispError {
  override readonly name = 'ObjectStoreError';
  constructor(
    readonly s3Code: string,
    message: string,
  ) {
    // The S3 code travels in params, so it is read by code (s3CodeOf), also from an error rebuilt off the wire.
    super('storage-failed', message, { params: { s3Code } });
  }
}

/** The S3 error code a bucket answered with (NoSuchKey, InvalidPart…); undefined for any other failure. */
export function s3CodeOf(e: unknown): string | undefined {
  return hasErrorCode(e, 'storage-failed') ? e.params?.s3Code : undefined;
}

/**
 * The bucket did not answer within its deadline, or failed in a way a retry may mend (connection refused or
 * reset, a 5xx, SlowDown), on every attempt. Answered to a client as the catalog's 503 sentence; `operatorDetail` (what
 * failed, never an address or the bucket's own words) is for the operator's log.
 */
export class StorageUnavailableError extends CrispError {
  override readonly name = 'StorageUnavailableError';
  constructor(readonly operatorDetail: string) {
    super('storage-unavailable', catalogMessage('storage-unavailable'));
  }
}

export function isStorageUnavailable(e: unknown): e is StorageUnavailableError {
  return e instanceof StorageUnavailableError;
}

/**
 * Runs `fn` until it succeeds or fails otherwise than by an outage, waiting out outages for up to `budgetMs`
 * (backoff from 1 s to 15 s): what a queued task does with its bucket calls, instead of failing at the first
 * outage. A call's own deadline and retries still bound each try.
 */
export async function waitOutOutage<T>(
  fn: () => Promise<T>,
  budgetMs: number,
  now: () => number = Date.now,
): Promise<T> {
  const until = now() + budgetMs;
  let pause = 1_000;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (!isStorageUnavailable(e) || now() + pause > until) throw e;
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(15_000, pause * 2);
    }
  }
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** `s3://bucket/some/prefix` → location; anything else is not an S3 location (undefined). */
export function parseS3Location(
  value: string,
  extra: { endpoint?: string | undefined; region?: string | undefined } = {},
): S3Location | undefined {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(value.trim());
  if (!m) return undefined;
  const bucket = m[1] as string;
  if (!BUCKET.test(bucket))
    throw new Error(`"${bucket}" is not a valid bucket name (3–63 lowercase letters, digits, dots and hyphens)`);
  const parts = (m[2] ?? '').split('/').filter(Boolean);
  if (parts.some((p) => p === '.' || p === '..'))
    throw new Error('the storage prefix may not contain "." or ".." segments');
  const prefix = parts.length > 0 ? `${parts.join('/')}/` : '';
  if (extra.endpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(extra.endpoint);
    } catch {
      throw new Error(`--s3-endpoint "${extra.endpoint}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error('--s3-endpoint must be an http:// or https:// URL');
  }
  return {
    bucket,
    prefix,
    ...(extra.endpoint !== undefined ? { endpoint: extra.endpoint.replace(/\/$/, '') } : {}),
    ...(extra.region !== undefined ? { region: extra.region } : {}),
  };
}
