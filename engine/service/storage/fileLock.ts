/**
 * A lock between processes that share a directory (the JSON accounts file, uploads on shared storage):
 * an exclusively created lock file, removed when done. A process killed while holding it leaves it behind;
 * it is taken over once older than `staleMs`. Used together with an in-process mutex, so a process only
 * competes with other processes for it.
 */
import { open, rm, stat, unlink } from 'node:fs/promises';

export async function withFileLock<R>(
  lockFile: string,
  fn: () => Promise<R>,
  opts: { staleMs?: number; waitMs?: number } = {},
): Promise<R> {
  const staleMs = opts.staleMs ?? 10_000;
  const waitMs = opts.waitMs ?? 15_000;
  const started = Date.now();
  for (;;) {
    try {
      const h = await open(lockFile, 'wx');
      await h.close();
      break;
    } catch (e) {
      // No directory: nothing there to protect (the caller answers "not found" itself).
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return fn();
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const s = await stat(lockFile).catch(() => undefined);
      if (s && Date.now() - s.mtimeMs > staleMs) await unlink(lockFile).catch(() => {});
      if (Date.now() - started > waitMs) throw new Error(`timed out waiting for ${lockFile}`);
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lockFile, { force: true });
  }
}
