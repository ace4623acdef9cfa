/**
 * Multipart uploads, S3-style: a session with presigned part URLs → PUT each part (ETag = quoted MD5)
 * → complete with {PartNumber, ETag} → one file that start-task can reference by `path`.
 * Layout: <data>/uploads/<uploadId>/{session.json, <fileName>.partial → <fileName>}.
 *
 * The hot path writes each byte once: the session's file is created sparse at its final size, each
 * part streams straight into its own region (offset (n−1)·partSize) while it is hashed, and complete
 * only checks the recorded ETags and sizes, sniffs the first bytes and renames the file into place —
 * nothing is re-read or copied. A part's bytes are checked against its size before they are written,
 * so a part can never spill into its neighbour's region; a refused or interrupted part is simply not
 * recorded, and complete refuses an upload with any part missing or any ETag that differs from the
 * client's. Part bytes and part records are not fsynced (a process crash loses nothing written; a
 * power loss may damage recent uploads, which then fail to decode and are sent again); the session
 * record is always replaced atomically, and un-recording a part before it is overwritten is fsynced.
 */
import { createHash, randomUUID } from 'node:crypto';
import { open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Caller, StoredPart } from '../api.js';
import {
  errors,
  type CompleteMultipartUploadResult,
  type GetUploadUrlRequest,
  type InputMimeType,
  type UploadSession,
} from '../../contract/index.js';
import { parseCompleteMultipartUpload, parseGetUploadUrl } from '../../contract/parseRequest.js';
import { readJson, tempPathFor, writeJsonAtomic } from '../storage/atomicFile.js';
import { withFileLock } from '../storage/fileLock.js';
import { MIME_EXTENSION, MIME_LABEL, sniffImageType } from '../../core/pipeline/imageSniff.js';
import { KeyedMutex } from '../storage/mutex.js';
import { uploadUsageOf, type UploadUsage } from '../quotas/uploadUsage.js';
import type { UrlSigner } from '../security/urlSigner.js';

/** S3's minimum part size; larger files get larger parts so no upload needs more than MAX_PARTS. */
export const MIN_PART_SIZE = 5 * 1024 * 1024;
const MAX_PARTS = 10_000;
/** Chunks of a part are gathered up to this many bytes per positional write (fewer syscalls, no copy). */
const WRITE_BATCH = 1024 * 1024;

export interface UploadLimitsConfig {
  maxFileSize: number;
  /** How long part URLs and an unfinished session stay valid. */
  uploadTtlMs: number;
  /** How long a completed upload stays available to start-task. */
  fileTtlMs: number;
}

interface StoredSession {
  session: UploadSession;
  userId: string;
  parts: Record<string, StoredPart>;
  completed: boolean;
}

export interface CompletedUpload {
  absolutePath: string;
  originalFileName: string;
  fileType: InputMimeType;
  fileSize: number;
}

/** What the engine needs of an upload store: in the data directory (this file) or in a bucket (s3UploadStore.ts). */
export interface Uploads {
  create(caller: Caller, body: unknown): Promise<UploadSession>;
  putPart(signedUrl: string, bytes: AsyncIterable<Uint8Array> | Uint8Array): Promise<StoredPart>;
  complete(caller: Caller, body: unknown): Promise<CompleteMultipartUploadResult>;
  /**
   * Resolves start-task's `files[].path` to a completed upload of this caller, or refuses. `localCopy` is
   * where a store that keeps files elsewhere puts a copy to read; the directory store answers its own file.
   */
  resolveCompleted(caller: Caller, filePath: string, index: number, localCopy: string): Promise<CompletedUpload>;
  sweep(): Promise<number>;
  /** What the user's unexpired sessions hold (the upload quotas). */
  usageOf(userId: string): Promise<UploadUsage>;
}

/** Ids, part size and part URLs of a new upload session (the same plan for the directory and the bucket). */
export async function planUpload(
  req: GetUploadUrlRequest,
  now: number,
  ttlMs: number,
  /** The URLs of parts 1…partCount of the planned upload, in order. */
  partUrls: (plan: {
    uploadId: string;
    path: string;
    partCount: number;
    /** Bytes of part n (1-based): partSize, the last one what is left of fileSize. */
    partLength: (partNumber: number) => number;
    expiresAt: number;
  }) => string[] | Promise<string[]>,
): Promise<UploadSession> {
  const uploadId = randomUUID();
  const partSize = Math.max(MIN_PART_SIZE, Math.ceil(req.fileSize / MAX_PARTS));
  const partCount = Math.max(1, Math.ceil(req.fileSize / partSize));
  const expiresAt = now + ttlMs;
  const fileName = `${randomUUID()}.${MIME_EXTENSION[req.fileType]}`;
  const filePath = `uploads/${uploadId}/${fileName}`;
  const partLength = (n: number) => (n < partCount ? partSize : req.fileSize - partSize * (partCount - 1));
  const urls = await partUrls({ uploadId, path: filePath, partCount, partLength, expiresAt });
  return {
    uploadId,
    partUrls: urls.map((signedUrl, i) => ({ partNumber: i + 1, signedUrl })),
    partSize,
    fileName,
    fileType: req.fileType,
    fileSize: req.fileSize,
    originalFileName: req.originalFileName,
    path: filePath,
    createdAt: now,
    expiresAt,
  };
}

/** complete's part list: each part once, none missing, none unknown; `etagOf` (when known) must match. */
export function checkPartList(
  parts: readonly { PartNumber: number; ETag: string }[],
  count: number,
  etagOf?: (n: number) => string | undefined,
): void {
  const seen = new Set<number>();
  for (const p of parts) {
    if (seen.has(p.PartNumber)) throw errors.badRequest(`part ${p.PartNumber} is listed twice`);
    seen.add(p.PartNumber);
    if (p.PartNumber > count) throw errors.badRequest(`part ${p.PartNumber} does not exist (this upload has ${count})`);
    if (etagOf) {
      const have = etagOf(p.PartNumber);
      if (!have) throw errors.badRequest(`part ${p.PartNumber} was not uploaded`);
      if (normalizeEtag(p.ETag) !== normalizeEtag(have))
        throw errors.badRequest(`ETag of part ${p.PartNumber} does not match`);
    }
  }
  for (let n = 1; n <= count; n++) {
    if (!seen.has(n)) throw errors.badRequest(`part ${n} is missing from parts`);
  }
}

export class UploadStore implements Uploads {
  private readonly lock = new KeyedMutex();
  /** The latest writer of each part (`<uploadId>/<n>`): a newer PUT of the same part cancels the older one. */
  private readonly writers = new Map<string, () => void>();
  private readonly root: string;

  constructor(
    dataDir: string,
    private readonly signer: UrlSigner,
    private readonly publicUrl: string,
    private readonly limits: UploadLimitsConfig,
    private readonly now: () => number = Date.now,
    /**
     * Several processes share the directory (`--storage` with `--db`): a session's read-modify-write also
     * takes a lock file, or parts recorded at once by two API processes would overwrite each other's record.
     */
    private readonly crossProcess = false,
  ) {
    this.root = path.join(dataDir, 'uploads');
  }

  /** Serialises the read-modify-write sections of one upload session (in this process, and across processes when shared). */
  private locked<T>(uploadId: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(uploadId, () =>
      this.crossProcess ? withFileLock(path.join(this.dir(uploadId), 'session.lock'), fn) : fn(),
    );
  }

  private dir(uploadId: string): string {
    // uploadIds are UUIDs we generated; anything else must never become a path.
    if (!/^[0-9a-f-]{36}$/.test(uploadId)) throw errors.notFound('Upload not found');
    return path.join(this.root, uploadId);
  }

  private partialPath(uploadId: string, fileName: string): string {
    return path.join(this.dir(uploadId), `${fileName}.partial`);
  }

  private async load(uploadId: string): Promise<StoredSession | undefined> {
    return readJson<StoredSession>(path.join(this.dir(uploadId), 'session.json'));
  }

  private save(s: StoredSession): Promise<void> {
    return writeJsonAtomic(path.join(this.dir(s.session.uploadId), 'session.json'), s);
  }

  /**
   * Records a part: atomic (temp + rename) but not fsynced, like the part's bytes themselves — after a
   * crash a part may be missing or re-sent, never half-recorded. Saves an fsync per part on the hot path.
   */
  private async savePartRecord(s: StoredSession): Promise<void> {
    const target = path.join(this.dir(s.session.uploadId), 'session.json');
    const tmp = tempPathFor(target);
    try {
      await writeFile(tmp, `${JSON.stringify(s, null, 1)}\n`, { mode: 0o644, flag: 'wx' });
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  async create(caller: Caller, body: unknown): Promise<UploadSession> {
    const req = parseGetUploadUrl(body, { maxFileSize: this.limits.maxFileSize });
    const session = await planUpload(req, this.now(), this.limits.uploadTtlMs, ({ uploadId, partCount, expiresAt }) =>
      Array.from(
        { length: partCount },
        (_, i) => this.publicUrl + this.signer.sign(`/uploads/${uploadId}/parts/${i + 1}`, {}, expiresAt),
      ),
    );
    const { uploadId, fileName } = session;
    await this.save({ session, userId: caller.userId, parts: {}, completed: false });
    // Sparse: takes no disk space until parts arrive, but every part can be written at its final offset.
    const fh = await open(this.partialPath(uploadId, fileName), 'wx', 0o644);
    try {
      await fh.truncate(req.fileSize);
    } finally {
      await fh.close();
    }
    return session;
  }

  async putPart(signedUrl: string, bytes: AsyncIterable<Uint8Array> | Uint8Array): Promise<StoredPart> {
    const v = this.signer.verify(signedUrl, this.now());
    if (!v.ok)
      throw errors.forbidden(
        v.reason === 'expired' ? 'this upload URL has expired' : 'the upload URL signature is invalid',
      );
    const m = /^\/uploads\/([0-9a-f-]{36})\/parts\/(\d{1,5})$/.exec(v.pathname);
    if (!m) throw errors.forbidden('the upload URL signature is invalid');
    const uploadId = m[1] as string;
    const partNumber = Number(m[2]);
    const stored = await this.load(uploadId);
    if (!stored) throw errors.notFound('Upload not found');
    const { session } = stored;
    if (stored.completed) throw errors.badRequest('this upload is already complete');
    if (partNumber < 1 || partNumber > session.partUrls.length)
      throw errors.badRequest(`part ${partNumber} does not exist`);
    const isLast = partNumber === session.partUrls.length;
    const expected = isLast ? session.fileSize - session.partSize * (session.partUrls.length - 1) : session.partSize;

    const key = String(partNumber);
    // One writer per part at a time, so a retry racing its original cannot interleave their bytes; and
    // a part is un-recorded before its region is overwritten, so complete can never accept a region
    // whose recorded ETag no longer describes its bytes (a retry that fails midway leaves it missing).
    // A retry usually means the first attempt's connection died; if the server has not noticed yet
    // (half-open socket), that attempt would hold the part forever. The newest attempt wins.
    const slot = `${uploadId}/${partNumber}`;
    this.writers.get(slot)?.();
    const cancel = () => {
      const source = bytes as Partial<{ destroy(e: Error): void }>;
      source.destroy?.(errors.badRequest(`a newer upload of part ${partNumber} replaced this one`));
    };
    this.writers.set(slot, cancel);
    try {
      return await this.lock.run(slot, async () => {
        await this.locked(uploadId, async () => {
          const fresh = (await this.load(uploadId)) ?? stored;
          if (fresh.completed) throw errors.badRequest('this upload is already complete');
          if (fresh.parts[key]) {
            delete fresh.parts[key];
            await this.save(fresh);
          }
        });
        const part = await writePartAt(
          this.partialPath(uploadId, session.fileName),
          (partNumber - 1) * session.partSize,
          bytes,
          expected,
          partNumber,
        );
        await this.locked(uploadId, async () => {
          const fresh = (await this.load(uploadId)) ?? stored;
          if (fresh.completed) throw errors.badRequest('this upload is already complete');
          fresh.parts[key] = part;
          await this.savePartRecord(fresh);
        });
        return part;
      });
    } finally {
      if (this.writers.get(slot) === cancel) this.writers.delete(slot);
    }
  }

  async complete(caller: Caller, body: unknown): Promise<CompleteMultipartUploadResult> {
    const req = parseCompleteMultipartUpload(body);
    return this.locked(req.uploadId, async () => {
      const stored = await this.load(req.uploadId).catch(() => undefined);
      if (!stored || stored.userId !== caller.userId) throw errors.notFound('Upload not found');
      const { session } = stored;
      if (stored.completed) return { status: 'success' };
      if (req.key !== session.path) throw errors.badRequest('key does not match the upload session path');
      if (this.now() > session.expiresAt) throw errors.badRequest('the upload session has expired');

      checkPartList(req.parts, session.partUrls.length, (n) => stored.parts[String(n)]?.etag);
      const total = Object.values(stored.parts).reduce((a, p) => a + p.size, 0);
      if (total !== session.fileSize)
        throw errors.badRequest(`the parts add up to ${total} bytes; fileSize is ${session.fileSize}`);

      const dir = this.dir(session.uploadId);
      const partial = this.partialPath(session.uploadId, session.fileName);
      const actual = sniffImageType(await readHead(partial));
      if (actual !== session.fileType) {
        throw errors.badRequest(`the uploaded bytes are not a ${MIME_LABEL[session.fileType]} image`);
      }
      await rename(partial, path.join(dir, session.fileName));
      stored.completed = true;
      // A completed file lives for fileTtlMs from now, whatever was left of the part URLs' lifetime.
      stored.session = { ...session, expiresAt: this.now() + this.limits.fileTtlMs };
      await this.save(stored);
      return { status: 'success' };
    });
  }

  /** Resolves start-task's `files[].path` to a completed upload of this caller (its own file: no copy), or refuses. */
  async resolveCompleted(caller: Caller, filePath: string, index: number): Promise<CompletedUpload> {
    const m = /^uploads\/([0-9a-f-]{36})\/([0-9a-f-]{36}\.(?:jpg|png|webp))$/.exec(filePath);
    const refuse = () =>
      errors.badRequest(`files[${index}] is not a completed upload of yours (path '${filePath.slice(0, 120)}')`);
    if (!m) throw refuse();
    const stored = await this.load(m[1] as string).catch(() => undefined);
    if (!stored || stored.userId !== caller.userId || !stored.completed || stored.session.fileName !== m[2])
      throw refuse();
    if (this.now() > stored.session.expiresAt) throw errors.badRequest(`files[${index}] has expired; upload it again`);
    return {
      absolutePath: path.join(this.dir(stored.session.uploadId), stored.session.fileName),
      originalFileName: stored.session.originalFileName,
      fileType: stored.session.fileType,
      fileSize: stored.session.fileSize,
    };
  }

  usageOf(userId: string): Promise<UploadUsage> {
    return uploadUsageOf(this.root, userId, this.now());
  }

  /** Removes sessions (finished or not) past their expiry. */
  async sweep(): Promise<number> {
    let removed = 0;
    const ids = await readdir(this.root).catch(() => [] as string[]);
    for (const id of ids) {
      let expired = false;
      try {
        const s = await this.load(id);
        expired = !s || this.now() > s.session.expiresAt;
        if (!s) {
          // A directory without a session file is debris from a crash; keep young ones (being created).
          const st = await stat(path.join(this.root, id));
          expired = this.now() - st.mtimeMs > this.limits.uploadTtlMs;
        }
      } catch {
        continue;
      }
      if (expired) {
        await this.lock.run(id, () => rm(path.join(this.root, id), { recursive: true, force: true }));
        removed++;
      }
    }
    return removed;
  }
}

/**
 * Streams one part into its region of the upload's file while hashing it. The size is checked before
 * each write, so at most `expected` bytes ever land at `offset`.
 */
async function writePartAt(
  file: string,
  offset: number,
  bytes: AsyncIterable<Uint8Array> | Uint8Array,
  expected: number,
  partNumber: number,
): Promise<StoredPart> {
  const fh = await open(file, 'r+').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') throw errors.notFound('Upload not found');
    throw e;
  });
  const hash = createHash('md5');
  let size = 0;
  let batch: Uint8Array[] = [];
  let batchBytes = 0;
  let position = offset;
  const writeAll = async (chunks: Uint8Array[], n: number, at: number) => {
    let written = 0;
    while (written < n) {
      // writev may write less than asked; continue with what is left.
      const r = await fh.writev(written === 0 ? chunks : remainder(chunks, written), at + written);
      written += r.bytesWritten;
    }
  };
  // One batch is written while the next is read from the socket, so disk and network overlap
  // (at most two batches of a part in memory).
  let inFlight: Promise<void> = Promise.resolve();
  const flush = async () => {
    if (batchBytes === 0) return;
    const write = writeAll(batch, batchBytes, position);
    // Marked handled now: it is awaited later, and may fail while the previous write is awaited.
    write.catch(() => undefined);
    position += batchBytes;
    batch = [];
    batchBytes = 0;
    await inFlight;
    inFlight = write;
  };
  try {
    for await (const chunk of bytes instanceof Uint8Array ? [bytes] : bytes) {
      size += chunk.length;
      if (size > expected) throw errors.badRequest(`part ${partNumber} is larger than ${expected} bytes`);
      hash.update(chunk);
      batch.push(chunk);
      batchBytes += chunk.length;
      if (batchBytes >= WRITE_BATCH) await flush();
    }
    await flush();
    await inFlight;
  } finally {
    // A refused part still waits for its write in flight, so the handle is never closed under it.
    await inFlight.catch(() => undefined);
    await fh.close();
  }
  if (size !== expected) throw errors.badRequest(`part ${partNumber} has ${size} bytes; expected ${expected}`);
  return { etag: `"${hash.digest('hex')}"`, size };
}

/** The chunks after the first `skip` bytes. */
function remainder(chunks: Uint8Array[], skip: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const c of chunks) {
    if (skip >= c.length) {
      skip -= c.length;
      continue;
    }
    out.push(skip > 0 ? c.subarray(skip) : c);
    skip = 0;
  }
  return out;
}

function normalizeEtag(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '').toLowerCase();
}

async function readHead(file: string): Promise<Uint8Array> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(16);
    const { bytesRead } = await fh.read(buf, 0, 16, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}
