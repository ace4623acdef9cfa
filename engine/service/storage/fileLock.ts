/**
 * A lock between processes that share a directory (the JSON accounts file, uploads on shared storage):
 * an exclusively created lock file that records its holder (lockOwner.ts), removed when done. A process killed
 * while holding it leaves it behind: when the record shows the holder is gone (same host, its PID no longer
 * runs) the lock is taken over at once; when that cannot be told (another host, a lock without a record) it is
 * taken over once older than `staleMs`. Used together with an in-process mutex, so a process only competes
 * with other processes for it.
 */
import { createLockFile, holderGone, lockRecord, readLockFile, releaseLockFile, removeLockIf } from './lockOwner.js';

export async function withFileLock<R>(
  lockFile: string,
  fn: () => Promise<R>,
  opts: { staleMs?: number; waitMs?: number } = {},
): Promise<R> {
  const staleMs = opts.staleMs ?? 10_000;
  const waitMs = opts.waitMs ?? 15_000;
  const started = Date.now();
  const mine = lockRecord();
  for (;;) {
    try {
      if (await createLockFile(lockFile, mine)) break;
    } catch (e) {
      // No directory: nothing there to protect (the caller answers "not found" itself).
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return fn();
      throw e;
    }
    const found = await readLockFile(lockFile);
    if (!found) continue; // released meanwhile: try again at once
    const gone = holderGone(found.record);
    if (gone === true || (gone === undefined && Date.now() - found.mtimeMs > staleMs)) {
      await removeLockIf(lockFile, found);
      continue;
    }
    if (Date.now() - started > waitMs) {
      const who = found.record ? ` (held by PID ${found.record.pid} on ${found.record.host})` : '';
      throw new Error(`timed out waiting for ${lockFile}${who}`);
    }
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
  }
  try {
    return await fn();
  } finally {
    await releaseLockFile(lockFile, mine.token);
  }
}
