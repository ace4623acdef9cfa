/**
 * ObjectStore on an S3-compatible bucket through the AWS SDK v3. Credentials come from the SDK's standard
 * chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role), never from Crisp's flags,
 * so they are neither logged nor stored by Crisp. Loaded only when `--storage s3://…` is used.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { tempPathFor } from './atomicFile.js';
import {
  ObjectStoreError,
  s3CodeOf,
  StorageUnavailableError,
  type CompletedPartRef,
  type ObjectStore,
  type S3Location,
} from './objectStore.js';

/** How long the bucket may take, and how often a failure that may pass is tried again. */
export interface BucketDeadlines {
  /** One attempt of one call (a transfer gets this plus a second per MiB moved). */
  callMs: number;
  /** Attempts of a call whose failure may pass (timeouts, connection errors, 5xx, SlowDown). */
  attempts: number;
  /** The pause before the second attempt; doubled before each further one (with jitter). */
  backoffMs: number;
  /** The readiness probe's one attempt: /readyz answers within this. */
  pingMs: number;
  /** Told of every failed attempt that may pass (what failed and why; no address): the operator's log. */
  onRetry?: (detail: string) => void;
}

export const DEFAULT_BUCKET_DEADLINES: BucketDeadlines = { callMs: 10_000, attempts: 3, backoffMs: 250, pingMs: 3_000 };

/** Transport failures worth another attempt (the bucket or the way to it is down, or cut the connection). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** S3 error names worth another attempt (the bucket is busy or briefly broken, not refusing the request). */
const TRANSIENT_S3 = new Set([
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  'RequestTimeTooSkewed',
]);

export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly deadlines: BucketDeadlines;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(location: S3Location, deadlines: Partial<BucketDeadlines> = {}) {
    this.deadlines = { ...DEFAULT_BUCKET_DEADLINES, ...deadlines };
    this.bucket = location.bucket;
    this.prefix = location.prefix;
    this.description = `s3://${location.bucket}/${location.prefix}`;
    this.client = new S3Client({
      // Without a region the SDK refuses to sign; S3-compatible services accept any.
      region: location.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
      ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
      // Checksums only where S3 requires them: since SDK 3.729 streamed PUTs otherwise go out as
      // aws-chunked bodies with trailing CRCs, which several S3-compatible services store verbatim.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // Retries are ours (attempt below): each attempt has its own deadline, and a streamed body is re-opened.
      maxAttempts: 1,
    });
  }

  private key(rel: string): string {
    return this.prefix + rel;
  }

  async upload(key: string, file: string, contentType?: string): Promise<void> {
    const { size } = await stat(file);
    // A fresh stream per attempt: a retried PUT sends the file again from its start.
    await this.attempt(`PUT ${key}`, size, (abortSignal) =>
      this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(key),
          Body: createReadStream(file),
          ContentLength: size,
          ...(contentType ? { ContentType: contentType } : {}),
        }),
        { abortSignal },
      ),
    );
  }

  async download(key: string, file: string): Promise<void> {
    await mkdir(path.dirname(file), { recursive: true });
    const size = (await this.head(key))?.size ?? 0;
    // The deadline covers the body too; an attempt cut midway starts again from nothing.
    await this.attempt(`GET ${key}`, size, async (abortSignal) => {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) }), {
        abortSignal,
      });
      const tmp = tempPathFor(file);
      try {
        await pipeline(r.Body as Readable, createWriteStream(tmp, { flags: 'wx' }), { signal: abortSignal });
        await rename(tmp, file);
      } catch (e) {
        await rm(tmp, { force: true });
        throw e;
      }
    });
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const r = await this.attempt(`HEAD ${key}`, 0, (abortSignal) =>
        this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(key) }), { abortSignal }),
      );
      return { size: r.ContentLength ?? 0 };
    } catch (e) {
      if (s3CodeOf(e) === 'NotFound' || s3CodeOf(e) === 'NoSuchKey') return undefined;
      throw e;
    }
  }

  async readStart(key: string, length: number): Promise<Uint8Array> {
    const bytes = await this.attempt(`GET ${key} (start)`, length, async (abortSignal) => {
      const r = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key), Range: `bytes=0-${length - 1}` }),
        { abortSignal },
      );
      return (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
    });
    return bytes.subarray(0, length);
  }

  async putJson(key: string, value: unknown): Promise<void> {
    const body = JSON.stringify(value);
    await this.attempt(`PUT ${key}`, body.length, (abortSignal) =>
      this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.key(key), Body: body, ContentType: 'application/json' }),
        { abortSignal },
      ),
    );
  }

  async getJson<T>(key: string): Promise<T | undefined> {
    try {
      const text = await this.attempt(`GET ${key}`, 0, async (abortSignal) => {
        const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) }), {
          abortSignal,
        });
        return (r.Body as { transformToString(): Promise<string> }).transformToString();
      });
      return JSON.parse(text) as T;
    } catch (e) {
      if (s3CodeOf(e) === 'NoSuchKey' || s3CodeOf(e) === 'NotFound') return undefined;
      throw e;
    }
  }

  async list(prefix: string): Promise<string[]> {
    return (await this.listDated(prefix)).map((o) => o.key);
  }

  async listDated(prefix: string): Promise<{ key: string; lastModified: number }[]> {
    const keys: { key: string; lastModified: number }[] = [];
    let token: string | undefined;
    do {
      const from = token;
      const r = await this.attempt(`LIST ${prefix}`, 0, (abortSignal) =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.key(prefix),
            ...(from ? { ContinuationToken: from } : {}),
          }),
          { abortSignal },
        ),
      );
      for (const o of r.Contents ?? [])
        if (o.Key) keys.push({ key: o.Key.slice(this.prefix.length), lastModified: o.LastModified?.getTime() ?? 0 });
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  async removePrefix(prefix: string): Promise<void> {
    const keys = await this.list(prefix);
    // DeleteObjects takes at most 1000 keys per request.
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      await this.attempt(`DELETE ${prefix}`, 0, (abortSignal) =>
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: batch.map((k) => ({ Key: this.key(k) })), Quiet: true },
          }),
          { abortSignal },
        ),
      );
    }
  }

  presignGet(key: string, opts: { fileName: string; contentType: string; expiresInSeconds: number }): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.key(key),
      ResponseContentType: opts.contentType,
      ResponseContentDisposition: `attachment; filename="${opts.fileName.replace(/[^\w.-]/g, '_')}"`,
      ResponseCacheControl: 'private, max-age=300',
    });
    return getSignedUrl(this.client, command, { expiresIn: opts.expiresInSeconds });
  }

  async createMultipart(key: string, contentType: string): Promise<string> {
    const r = await this.attempt(`CREATE MULTIPART ${key}`, 0, (abortSignal) =>
      this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key(key), ContentType: contentType }),
        { abortSignal },
      ),
    );
    if (!r.UploadId)
      throw new ObjectStoreError('NoUploadId', 'the bucket started a multipart upload without an upload id');
    return r.UploadId;
  }

  presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    length: number,
    expiresInSeconds: number,
  ): Promise<string> {
    const command = new UploadPartCommand({
      Bucket: this.bucket,
      Key: this.key(key),
      UploadId: uploadId,
      PartNumber: partNumber,
      ContentLength: length,
    });
    // content-length among the signed headers: a PUT of another size does not match the signature.
    return getSignedUrl(this.client, command, {
      expiresIn: expiresInSeconds,
      signableHeaders: new Set(['content-length']),
    });
  }

  async completeMultipart(key: string, uploadId: string, parts: CompletedPartRef[]): Promise<void> {
    const sorted = [...parts].sort((a, b) => a.PartNumber - b.PartNumber);
    await this.attempt(`COMPLETE MULTIPART ${key}`, 0, (abortSignal) =>
      this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: this.key(key),
          UploadId: uploadId,
          MultipartUpload: { Parts: sorted },
        }),
        { abortSignal },
      ),
    );
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    await this.attempt(`ABORT MULTIPART ${key}`, 0, (abortSignal) =>
      this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.key(key), UploadId: uploadId }),
        { abortSignal },
      ),
    );
  }

  async ping(): Promise<void> {
    // One short attempt: the probe must answer within its own deadline, and says only whether the bucket answers.
    await this.attempt(
      'HEAD bucket',
      0,
      (abortSignal) => this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal }),
      { attempts: 1, callMs: this.deadlines.pingMs },
    );
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.client.destroy();
  }

  /**
   * Every call goes through here: each attempt gets a deadline (callMs, plus a second per MiB moved), a failure
   * that may pass is tried again after a growing pause, and callers see two error types only — ObjectStoreError
   * (the bucket refused, with its code) or StorageUnavailableError (no usable answer in time). Neither carries the
   * bucket's address, a socket error or the bucket's XML: those go to `detail`-free messages and the operator log.
   */
  private async attempt<T>(
    what: string,
    bytes: number,
    call: (signal: AbortSignal) => Promise<T>,
    override: Partial<Pick<BucketDeadlines, 'attempts' | 'callMs'>> = {},
  ): Promise<T> {
    const attempts = override.attempts ?? this.deadlines.attempts;
    const ms = (override.callMs ?? this.deadlines.callMs) + Math.ceil(bytes / 1048576) * 1000;
    let last = '';
    for (let i = 1; i <= attempts; i++) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), ms);
      this.timers.add(timer);
      try {
        return await call(controller.signal);
      } catch (e) {
        if (e instanceof S3ServiceException && !TRANSIENT_S3.has(e.name) && (e.$metadata?.httpStatusCode ?? 0) < 500)
          throw new ObjectStoreError(e.name, `${this.description}: ${what}: the bucket answered ${e.name}`);
        const code = (e as NodeJS.ErrnoException).code ?? '';
        const transient =
          controller.signal.aborted ||
          e instanceof S3ServiceException ||
          NETWORK_CODES.has(code) ||
          (e as Error).name === 'TimeoutError';
        // Anything else (this disk full, a bug) is not the bucket's outage: it goes up as it is.
        if (!transient) throw e;
        last = controller.signal.aborted
          ? `no answer within ${ms} ms`
          : e instanceof S3ServiceException
            ? `the bucket answered ${e.name}`
            : `the connection failed (${code || (e as Error).name})`;
        this.deadlines.onRetry?.(`${this.description}: ${what}: attempt ${i} of ${attempts}: ${last}`);
      } finally {
        clearTimeout(timer);
        this.timers.delete(timer);
      }
      if (i < attempts) {
        const pause = this.deadlines.backoffMs * 2 ** (i - 1) * (0.5 + Math.random());
        await new Promise((r) => setTimeout(r, pause));
      }
    }
    throw new StorageUnavailableError(
      `${this.description}: ${what}: ${last} (${attempts} attempt${attempts > 1 ? 's' : ''})`,
    );
  }
}
