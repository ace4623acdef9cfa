/**
 * A small persistent state held in one JSON file, written atomically (temp file + fsync + rename) so a
 * crash leaves either the old or the new state, never a torn one. Updates are serialised by an
 * in-process mutex and, because `crisp users …` may edit the file while `crisp serve` runs, by a lock
 * file across processes; each update re-reads the file when another process changed it.
 *
 * This is the seam where PostgreSQL would replace JSON: see docs/deploy.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Mutex } from '../storage/mutex.js';

export interface StateFile<T> {
  /** The last committed state (may be stale by another process's write; call refresh() to catch up). */
  current(): T;
  /** Re-reads the file if another process changed it since we last read or wrote it. */
  refresh(): Promise<void>;
  /**
   * Runs `fn` on a private copy of the latest state; when it returns, the copy is persisted and becomes
   * the current state. If `fn` throws or the write fails, nothing changes.
   */
  update<R>(fn: (draft: T) => R): Promise<R>;
}

export interface StateFileOptions<T> {
  file: string;
  initial: () => T;
  /** Validates/upgrades what was read; throws on a corrupt file (never silently resets balances). */
  parse: (raw: unknown) => T;
}

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 15_000;

export async function openStateFile<T>(opts: StateFileOptions<T>): Promise<StateFile<T>> {
  const { file } = opts;
  const lockFile = `${file}.lock`;
  const mutex = new Mutex();
  await mkdir(path.dirname(file), { recursive: true });

  let state: T;
  let version = ''; // mtime+size of the file as we last saw it

  const fingerprint = async (): Promise<string> => {
    try {
      const s = await stat(file);
      return `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw e;
    }
  };

  const load = async (): Promise<void> => {
    const fp = await fingerprint();
    if (fp === version && fp !== '') return;
    if (fp === '') {
      state = opts.initial();
      version = '';
      return;
    }
    const text = await readFile(file, 'utf8');
    state = opts.parse(JSON.parse(text));
    version = fp;
  };

  const withLock = async <R>(fn: () => Promise<R>): Promise<R> => {
    const started = Date.now();
    for (;;) {
      try {
        const h = await open(lockFile, 'wx');
        await h.close();
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        // A process killed while holding the lock leaves it behind; steal it once it is old enough.
        const s = await stat(lockFile).catch(() => undefined);
        if (s && Date.now() - s.mtimeMs > LOCK_STALE_MS) await unlink(lockFile).catch(() => {});
        if (Date.now() - started > LOCK_WAIT_MS) throw new Error(`timed out waiting for ${lockFile}`);
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
      }
    }
    try {
      return await fn();
    } finally {
      await rm(lockFile, { force: true });
    }
  };

  const write = async (next: T): Promise<void> => {
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      const h = await open(tmp, 'w', 0o600);
      try {
        await h.writeFile(JSON.stringify(next, null, 1));
        await h.sync();
      } finally {
        await h.close();
      }
      await rename(tmp, file);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => {});
      throw e;
    }
    version = await fingerprint();
  };

  await load();

  return {
    current: () => state,
    refresh: () => mutex.run(load),
    update: (fn) =>
      mutex.run(() =>
        withLock(async () => {
          await load();
          const draft = structuredClone(state);
          const result = fn(draft);
          await write(draft);
          state = draft;
          return result;
        }),
      ),
  };
}
