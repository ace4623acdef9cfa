/**
 * A data folder has one owner. The embedded `crisp serve` (no `--db`) owns its folder outright: at start-up it
 * resumes or fails the tasks it finds unfinished and releases charges without a task, which is only right if
 * no other process is running them. So before it opens anything it takes `<folder>/owner.lock` (a lock file
 * that records its holder, lockOwner.ts); a second process finds it and refuses with a sentence naming the
 * owner, having touched nothing. Processes that share a folder by design (`crisp serve --db`, `crisp worker`)
 * take no lock but refuse a folder an embedded server owns.
 *
 * A lock whose owner is gone is taken over at once: on the same host, a PID that no longer runs; on another host
 * (a folder on shared storage), one whose heartbeat — the owner touches the file every HEARTBEAT_MS — is older
 * than STALE_MS.
 */
import { mkdir, utimes } from 'node:fs/promises';
import path from 'node:path';
import { catalogMessage, CrispError } from '../../contract/errorCatalog.js';
import {
  createLockFile,
  holderGone,
  lockRecord,
  readLockFile,
  releaseLockFile,
  removeLockIf,
  type FoundLock,
  type LockRecord,
} from './lockOwner.js';

export const OWNER_LOCK = 'owner.lock';
const HEARTBEAT_MS = 10_000;
/** An owner on another host whose lock has not been touched for this long is gone. */
const STALE_MS = 60_000;

/**
 * Thrown when another live process owns the folder (catalog row folder-in-use); its message is the sentence the
 * refused command prints.
 */
export class FolderInUseError extends CrispError {
  override readonly name = 'FolderInUseError';
  constructor(
    readonly folder: string,
    readonly owner: LockRecord | undefined,
    /** The flag that named the folder, for the sentence's way out. */
    flag = '--data',
  ) {
    const params = { name: folder, detail: describeOwner(owner), flag };
    super('folder-in-use', catalogMessage('folder-in-use', params), { params });
  }
}

function describeOwner(owner: LockRecord | undefined): string {
  if (!owner) return 'another Crisp process';
  const parts = [`PID ${owner.pid}`];
  if (owner.port !== undefined) parts.push(`port ${owner.port}`);
  if (owner.host !== undefined) parts.push(`host ${owner.host}`);
  return `${owner.role ?? 'another Crisp process'} (${parts.join(', ')}, since ${new Date(owner.since).toISOString()})`;
}

export interface FolderOwnership {
  readonly folder: string;
  /** Gives the folder up (at close; a killed owner's lock is taken over by the next one at once). */
  release(): Promise<void>;
}

function gone(found: FoundLock): boolean {
  const judged = holderGone(found.record);
  if (judged !== undefined) return judged;
  return Date.now() - found.mtimeMs > STALE_MS;
}

/**
 * Takes `folder` for this process (created if missing), or throws FolderInUseError naming the live owner.
 * `who`: what this process is, for the sentence another one would print ('crisp serve', and its port).
 */
export async function takeFolder(
  folder: string,
  who: { role: string; port?: number },
  flag = '--data',
): Promise<FolderOwnership> {
  const dir = path.resolve(folder);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, OWNER_LOCK);
  const mine = lockRecord(who);
  for (let attempt = 0; ; attempt++) {
    if (await createLockFile(file, mine)) break;
    const found = await readLockFile(file);
    if (!found) continue;
    if (!gone(found) || attempt >= 5) throw new FolderInUseError(dir, found.record, flag);
    await removeLockIf(file, found);
  }
  const beat = setInterval(() => {
    const now = new Date();
    void utimes(file, now, now).catch(() => undefined);
  }, HEARTBEAT_MS);
  beat.unref();
  let released = false;
  return {
    folder: dir,
    async release() {
      if (released) return;
      released = true;
      clearInterval(beat);
      await releaseLockFile(file, mine.token);
    },
  };
}

/**
 * For processes that share a folder by design (`--db`): refuses one that an embedded server owns (it would
 * resume, fail or remove what they write). Takes nothing.
 */
export async function assertNotOwned(folder: string, flag: string): Promise<void> {
  const dir = path.resolve(folder);
  const found = await readLockFile(path.join(dir, OWNER_LOCK));
  if (!found || gone(found)) return;
  throw new FolderInUseError(dir, found.record, flag);
}
