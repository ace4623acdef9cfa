/**
 * Multipart uploads straight into the bucket (`--storage s3://…`): get-upload-url starts an S3 multipart
 * upload and hands out presigned UploadPart URLs, so part bytes go from the client to the bucket and never
 * through an API process; complete-multipart-upload joins them in the bucket, which checks every ETag. The
 * session record (owner, expiry, the bucket's upload id) is a JSON object beside the file, so any API process
 * can complete or resolve an upload another one started.
 * Keys: `uploads/<uploadId>/session.json`, `uploads/<uploadId>/<fileName>` — the contract's `path`.
 */
import type { Caller, StoredPart } from '../api.js';
import {
  errors,
  type CompleteMultipartUploadResult,
  type InputMimeType,
  type UploadSession,
} from '../../contract/index.js';
import { parseCompleteMultipartUpload, parseGetUploadUrl } from '../../contract/parseRequest.js';
import { isStorageUnavailable, s3CodeOf, type ObjectStore } from '../storage/objectStore.js';
import { MIME_LABEL, sniffImageType } from '../../core/pipeline/imageSniff.js';
import { KeyedMutex } from '../storage/mutex.js';
import type { UploadUsage } from '../quotas/uploadUsage.js';
import type { PgUploadIndex } from './pgUploadIndex.js';
import {
  checkPartList,
  planUpload,
  type CompletedUpload,
  type UploadLimitsConfig,
  type Uploads,
} from './uploadStore.js';

interface BucketSession {
  session: UploadSession;
  userId: string;
  /** The bucket's id for the multipart upload (not the contract's uploadId). */
  s3UploadId: string;
  completed: boolean;
}

const ID = /^[0-9a-f-]{36}$/;
/** S3 error codes that mean the client's part list is wrong (a 400 for the client, not a 500). */
const PART_ERRORS: Record<string, string> = {
  InvalidPart: 'a listed part was not uploaded, or its ETag does not match',
  InvalidPartOrder: 'the parts are not in ascending order',
  EntityTooSmall: 'a part other than the last is smaller than the 5 MiB minimum',
  NoSuchUpload: 'the upload session has expired',
};

export class S3UploadStore implements Uploads {
  private readonly lock = new KeyedMutex();

  constructor(
    private readonly objects: ObjectStore,
    private readonly limits: UploadLimitsConfig,
    private readonly now: () => number = Date.now,
    /** Counts sessions for the quotas (a bucket cannot be asked "how many of this user's" cheaply). */
    private readonly index?: PgUploadIndex,
  ) {}

  async usageOf(userId: string): Promise<UploadUsage> {
    return this.index ? this.index.usageOf(userId, this.now()) : { openUploads: 0, bytes: 0 };
  }

  private sessionKey(uploadId: string): string {
    if (!ID.test(uploadId)) throw errors.notFound('Upload not found');
    return `uploads/${uploadId}/session.json`;
  }

  private load(uploadId: string): Promise<BucketSession | undefined> {
    return this.objects.getJson<BucketSession>(this.sessionKey(uploadId));
  }

  async create(caller: Caller, body: unknown): Promise<UploadSession> {
    const req = parseGetUploadUrl(body, { maxFileSize: this.limits.maxFileSize });
    let s3UploadId = '';
    // Presigned URLs are valid for at most 7 days (SigV4); the session never outlives its part URLs.
    const ttlSeconds = Math.max(1, Math.min(7 * 86_400, Math.ceil(this.limits.uploadTtlMs / 1000)));
    const session = await planUpload(req, this.now(), ttlSeconds * 1000, async ({ path, partCount, partLength }) => {
      s3UploadId = await this.objects.createMultipart(path, req.fileType);
      // Each URL signs its part's exact length: the bucket refuses a PUT of any other size (what was declared
      // is what the quotas counted and the price was made of).
      return Promise.all(
        Array.from({ length: partCount }, (_, i) =>
          this.objects.presignPart(path, s3UploadId, i + 1, partLength(i + 1), ttlSeconds),
        ),
      );
    });
    await this.objects.putJson(this.sessionKey(session.uploadId), {
      session,
      userId: caller.userId,
      s3UploadId,
      completed: false,
    } satisfies BucketSession);
    await this.index?.add(session.uploadId, caller.userId, session.fileSize, session.expiresAt);
    return session;
  }

  /** Part URLs point at the bucket: a PUT that reaches an API process is not for an upload of this store. */
  async putPart(): Promise<StoredPart> {
    throw errors.notFound('Upload not found');
  }

  async complete(caller: Caller, body: unknown): Promise<CompleteMultipartUploadResult> {
    const req = parseCompleteMultipartUpload(body);
    return this.lock.run(req.uploadId, async () => {
      const stored = await this.load(req.uploadId);
      if (!stored || stored.userId !== caller.userId) throw errors.notFound('Upload not found');
      const { session } = stored;
      if (stored.completed) return { status: 'success' };
      if (req.key !== session.path) throw errors.badRequest('key does not match the upload session path');
      if (this.now() > session.expiresAt) throw errors.badRequest('the upload session has expired');
      // The bucket checks each part's ETag and size when it joins them.
      checkPartList(req.parts, session.partUrls.length);
      try {
        await this.objects.completeMultipart(session.path, stored.s3UploadId, req.parts);
      } catch (e) {
        const s3Code = s3CodeOf(e);
        if (s3Code && PART_ERRORS[s3Code]) {
          // Another API process may have completed it a moment ago: then the bucket no longer knows the upload.
          const again = await this.load(req.uploadId);
          if (again?.completed) return { status: 'success' };
          throw errors.badRequest(PART_ERRORS[s3Code] as string);
        }
        throw e;
      }
      const head = await this.objects.head(session.path);
      const refuse = async (message: string) => {
        await this.objects.removePrefix(`uploads/${session.uploadId}/`).catch(() => undefined);
        await this.index?.remove(session.uploadId).catch(() => undefined);
        return errors.badRequest(message);
      };
      if (head?.size !== session.fileSize)
        throw await refuse(`the parts add up to ${head?.size ?? 0} bytes; fileSize is ${session.fileSize}`);
      if (sniffImageType(await this.objects.readStart(session.path, 16)) !== session.fileType) {
        throw await refuse(`the uploaded bytes are not a ${MIME_LABEL[session.fileType]} image`);
      }
      // A completed file lives for fileTtlMs from now, whatever was left of the part URLs' lifetime.
      const expiresAt = this.now() + this.limits.fileTtlMs;
      await this.objects.putJson(this.sessionKey(session.uploadId), {
        ...stored,
        session: { ...session, expiresAt },
        completed: true,
      } satisfies BucketSession);
      await this.index?.completed(session.uploadId, expiresAt);
      return { status: 'success' };
    });
  }

  async resolveCompleted(caller: Caller, filePath: string, index: number, localCopy: string): Promise<CompletedUpload> {
    const m = /^uploads\/([0-9a-f-]{36})\/([0-9a-f-]{36}\.(?:jpg|png|webp))$/.exec(filePath);
    const refuse = () =>
      errors.badRequest(`files[${index}] is not a completed upload of yours (path '${filePath.slice(0, 120)}')`);
    if (!m) throw refuse();
    // No record is an answer (the upload is not this caller's); a bucket that does not answer is an outage (503),
    // never blamed on the caller's path.
    const stored = await this.load(m[1] as string).catch((e: unknown) => {
      if (isStorageUnavailable(e)) throw e;
      return undefined;
    });
    if (!stored || stored.userId !== caller.userId || !stored.completed || stored.session.fileName !== m[2])
      throw refuse();
    if (this.now() > stored.session.expiresAt) throw errors.badRequest(`files[${index}] has expired; upload it again`);
    // The API reads the header (price, limits) from a local copy; the task's own input object is made from it.
    await this.objects.download(stored.session.path, localCopy);
    return {
      absolutePath: localCopy,
      originalFileName: stored.session.originalFileName,
      fileType: stored.session.fileType as InputMimeType,
      fileSize: stored.session.fileSize,
    };
  }

  /**
   * Removes sessions past their expiry, and aborts their unfinished bucket uploads (whose parts S3 would bill).
   * A record stays until the bucket has confirmed the abort (or no longer knows the upload): with it gone, no
   * later sweep could find the parts. A session the bucket would not abort is left for the next sweep.
   */
  async sweep(): Promise<number> {
    let removed = 0;
    const sessions = (await this.objects.list('uploads/')).filter((k) => k.endsWith('/session.json'));
    for (const key of sessions) {
      const id = key.split('/')[1] as string;
      const stored = await this.load(id).catch(() => undefined);
      if (!stored || this.now() <= stored.session.expiresAt) continue;
      if (!stored.completed) {
        const aborted = await this.objects.abortMultipart(stored.session.path, stored.s3UploadId).then(
          () => true,
          (e: unknown) => s3CodeOf(e) === 'NoSuchUpload',
        );
        if (!aborted) continue;
      }
      await this.objects.removePrefix(`uploads/${id}/`);
      await this.index?.remove(id);
      removed++;
    }
    return removed;
  }
}
