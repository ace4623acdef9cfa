/**
 * The multipart upload flow: get-upload-url → parallel part PUTs (each retried with backoff) →
 * complete-multipart-upload. Parts already stored are remembered, so after a dropped connection only the
 * missing parts are sent again while the session is valid; an expired session (403 on a part) starts a
 * fresh one, once.
 */
import { open } from 'node:fs/promises';
import {
  type CompletedPart,
  type FileData,
  type InputMimeType,
  type UploadSession,
  crispError,
  hasErrorCode,
  isCrispError,
  isRetryable,
} from '../../engine/contract/index.js';
import { backoffDelay, sleep, type BackoffPolicy } from './backoff.js';
import type { ContractClient } from './contractClient.js';

export interface MultipartOptions {
  concurrency: number;
  /** Attempts per part, the first included. */
  partAttempts: number;
  retry: BackoffPolicy;
  /** Observes each finished part (progress, tests). */
  onPart?: (partNumber: number, attempt: number) => void;
  onProgress?: (uploadedBytes: number, totalBytes: number) => void;
}

export interface UploadInput {
  path: string;
  size: number;
  mime: InputMimeType;
  originalFileName: string;
}

/** Failures worth another attempt at the same part: the connection, the server, or a rate limit. */
function retryablePart(e: unknown): boolean {
  return isRetryable(e);
}

async function uploadParts(
  client: ContractClient,
  input: UploadInput,
  session: UploadSession,
  done: Map<number, string>,
  opts: MultipartOptions,
  signal?: AbortSignal,
): Promise<void> {
  const fh = await open(input.path, 'r');
  try {
    const pending = session.partUrls.filter((p) => !done.has(p.partNumber));
    let uploaded = [...done.keys()].reduce((n, part) => n + partLength(session, part), 0);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < pending.length) {
        const part = pending[next++]!;
        const length = partLength(session, part.partNumber);
        const bytes = new Uint8Array(length);
        await fh.read(bytes, 0, length, (part.partNumber - 1) * session.partSize);
        for (let attempt = 0; ; attempt++) {
          if (signal?.aborted) throw crispError('cancelled');
          try {
            done.set(part.partNumber, await client.putPart(part.signedUrl, bytes, signal));
            opts.onPart?.(part.partNumber, attempt);
            uploaded += length;
            opts.onProgress?.(uploaded, input.size);
            break;
          } catch (e) {
            if (!retryablePart(e) || attempt + 1 >= opts.partAttempts || signal?.aborted) throw e;
            const wait =
              isCrispError(e) && e.retryAfterMs !== undefined ? e.retryAfterMs : backoffDelay(opts.retry, attempt);
            await sleep(wait, signal);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, pending.length)) }, worker));
  } finally {
    await fh.close();
  }
}

function partLength(session: UploadSession, partNumber: number): number {
  const last = session.partUrls.length;
  return partNumber === last ? session.fileSize - session.partSize * (last - 1) : session.partSize;
}

/** Uploads one file; answers the FileData reference start-task takes in `files`. */
export async function uploadMultipart(
  client: ContractClient,
  input: UploadInput,
  opts: MultipartOptions,
  signal?: AbortSignal,
): Promise<Partial<FileData> & { path: string }> {
  for (let sessionAttempt = 0; ; sessionAttempt++) {
    const session = await client.getUploadUrl(
      { fileSize: input.size, fileType: input.mime, originalFileName: input.originalFileName },
      signal,
    );
    const done = new Map<number, string>();
    try {
      await uploadParts(client, input, session, done, opts, signal);
    } catch (e) {
      // A 403 on a part means the signed URLs expired (or were refused): a new session is the only way on.
      if (hasErrorCode(e, 'forbidden') && sessionAttempt === 0) continue;
      throw e;
    }
    const parts: CompletedPart[] = [...done.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([PartNumber, ETag]) => ({ PartNumber, ETag }));
    await withRetries(
      () => client.completeMultipartUpload(session.uploadId, session.path, parts, signal),
      opts,
      signal,
    );
    return {
      path: session.path,
      fileName: session.fileName,
      fileType: session.fileType,
      fileSize: session.fileSize,
      originalFileName: session.originalFileName,
    };
  }
}

/** Completing twice is harmless server-side only if the first never arrived; a network failure is retried. */
async function withRetries<T>(fn: () => Promise<T>, opts: MultipartOptions, signal?: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!retryablePart(e) || attempt + 1 >= opts.partAttempts || signal?.aborted) throw e;
      await sleep(backoffDelay(opts.retry, attempt), signal);
    }
  }
}
