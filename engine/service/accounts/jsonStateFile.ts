/**
 * A small persistent state held in one JSON file, written atomically (temp file + fsync + rename) so a
 * crash leaves either the old or the new state, never a torn one. Updates are serialised by an
 * in-process mutex and, because `crisp users …` may edit the file while `crisp serve` runs, by a lock
 * file across processes; each update re-reads the file when another process changed it.
 *
 * This is the seam where PostgreSQL would replace JSON: see docs/deploy.md.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../storage/atomicFile.js';
import { withFileLock } from '../storage/fileLock.js';
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

/** A lock older than this was left by a killed process and is taken over. */
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

  // The JSON holds key hashes and balances: readable by its owner only.
  const write = async (next: T): Promise<void> => {
    await writeFileAtomic(file, JSON.stringify(next, null, 1), { mode: 0o600 });
    version = await fingerprint();
  };

  await load();

  return {
    current: () => state,
    refresh: () => mutex.run(load),
    update: (fn) =>
      mutex.run(() =>
        withFileLock(
          lockFile,
          async () => {
            await load();
            const draft = structuredClone(state);
            const result = fn(draft);
            await write(draft);
            state = draft;
            return result;
          },
          { staleMs: LOCK_STALE_MS, waitMs: LOCK_WAIT_MS },
        ),
      ),
  };
}
