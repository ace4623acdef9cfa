/**
 * Task files in a folder: uploads as S3-style multipart sessions with HMAC-signed part URLs under the data
 * directory, task inputs and outputs in each task's folder. The embedded deployment's files, and a PostgreSQL
 * deployment's when its processes share one directory (`--storage DIR`).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { EngineContext, TaskFiles } from './engine.js';
import { createUrlSigner, loadOrCreateSecret } from './security/urlSigner.js';
import { UploadStore } from './uploads/uploadStore.js';

export interface LocalFilesOptions {
  /** Origin used in presigned part URLs, e.g. `http://127.0.0.1:8787`; in-process use needs none. */
  publicUrl?: string | undefined;
  /** Several processes share the directory: upload sessions also take a lock file (see UploadStore). */
  shared: boolean;
}

export async function localFiles(ctx: EngineContext, opts: LocalFilesOptions): Promise<TaskFiles> {
  const signer = createUrlSigner(await loadOrCreateSecret(ctx.dataDir));
  const uploads = new UploadStore(
    ctx.dataDir,
    signer,
    (opts.publicUrl ?? 'crisp://local').replace(/\/$/, ''),
    ctx.limits,
    ctx.now,
    opts.shared,
  );
  return {
    uploads,
    // Nothing lives outside the task's folder, which the task's own removal takes.
    remove: async () => undefined,
    async locate(file) {
      const abs = path.isAbsolute(file.path) ? file.path : path.join(ctx.dataDir, file.path);
      const st = await stat(abs).catch(() => undefined);
      return st?.isFile() ? { path: abs } : undefined;
    },
  };
}
