/**
 * Lock files that say who holds them. Every lock Crisp leaves on disk (accounts.json.lock, an upload session's
 * lock on shared storage, the data folder's owner.lock) is created whole — its record written to a temp file, then
 * hard-linked into place, so it never exists empty — and records its holder: PID, host, the process's start time
 * (Linux) and a random token. A process that finds a lock can then tell at once whether its holder is gone:
 * - on the same host, a PID that no longer runs (or now belongs to a process started at another time) is gone;
 * - on another host (a shared folder), or a lock without a record (an older Crisp's), nothing can be asked:
 *   the caller falls back to the lock's age.
 * A gone holder's lock is taken over at once, by a compare-and-swap: the lock is renamed aside and removed only
 * if it is still the very one judged gone; a newer holder's lock is put back.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';

export interface LockRecord {
  pid: number;
  host: string;
  /** The process's start time as the kernel counts it (Linux /proc), so a reused PID is not taken for its holder. */
  started?: string;
  token: string;
  /** What holds it, for the sentence a refused process prints: 'crisp serve', 'crisp worker'… */
  role?: string;
  port?: number;
  /** When the lock was taken (ms since the epoch). */
  since: number;
}

export interface FoundLock {
  /** The file's bytes as read: what a takeover compares against. */
  text: string;
  /** Absent: empty or not Crisp's JSON (an older Crisp's empty lock, a write cut short on a filesystem without links). */
  record?: LockRecord;
  mtimeMs: number;
}

/** The start time of process `pid` (field 22 of /proc/<pid>/stat), or undefined where there is no /proc. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

const OWN_START = processStartTime(process.pid);

export function lockRecord(extra: { role?: string; port?: number } = {}): LockRecord {
  return {
    pid: process.pid,
    host: os.hostname(),
    ...(OWN_START !== undefined ? { started: OWN_START } : {}),
    token: randomUUID(),
    ...extra,
    since: Date.now(),
  };
}

/**
 * Whether the holder of `record` is gone: true (it no longer runs: take the lock over), false (it runs), or
 * undefined (it cannot be told from here: no record, or another host).
 */
export function holderGone(record: LockRecord | undefined): boolean | undefined {
  if (!record || record.host !== os.hostname()) return undefined;
  if (record.pid === process.pid) {
    // This process's own PID: either a lock of ours (another handle on the same file) or one left by an earlier
    // process that had the same PID (a container's PID 1 after a restart): the start time tells them apart.
    if (record.started === undefined || OWN_START === undefined) return false;
    return record.started !== OWN_START;
  }
  try {
    process.kill(record.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return true;
    // EPERM: the PID runs, as another user.
  }
  if (record.started === undefined) return false;
  const now = processStartTime(record.pid);
  return now !== undefined && now !== record.started;
}

function parse(text: string): LockRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<LockRecord>;
    if (typeof r.pid === 'number' && typeof r.host === 'string' && typeof r.token === 'string') return r as LockRecord;
  } catch {
    // not a record
  }
  return undefined;
}

/** Creates `file` holding `record`, whole, unless it exists (then false). */
export async function createLockFile(file: string, record: LockRecord): Promise<boolean> {
  const text = JSON.stringify(record);
  const tmp = `${file}.${process.pid}.${record.token}.tmp`;
  await writeFile(tmp, text);
  try {
    await link(tmp, file);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // A filesystem without hard links: exclusive create, then the record (a crash in between leaves it empty,
    // which readers treat as an unrecorded lock and judge by its age).
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw e;
    let h;
    try {
      h = await open(file, 'wx');
    } catch (e2) {
      if ((e2 as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e2;
    }
    try {
      await h.writeFile(text);
    } finally {
      await h.close();
    }
    return true;
  } finally {
    await rm(tmp, { force: true });
  }
}

/** The lock at `file` as it is now; undefined when there is none. */
export async function readLockFile(file: string): Promise<FoundLock | undefined> {
  try {
    const [text, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    const record = parse(text);
    return { text, mtimeMs: st.mtimeMs, ...(record ? { record } : {}) };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * Removes the lock at `file` only if it still is `judged` (compare-and-swap): it is renamed aside first, and put
 * back when what was moved is a newer holder's. True when the judged lock is gone (removed, or already gone).
 */
export async function removeLockIf(file: string, judged: FoundLock): Promise<boolean> {
  const aside = `${file}.${process.pid}.${randomUUID()}.gone`;
  try {
    await rename(file, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw e;
  }
  const moved = await readFile(aside, 'utf8').catch(() => '');
  if (moved === judged.text) {
    await rm(aside, { force: true });
    return true;
  }
  // Someone took the lock over between our read and our rename: it is theirs, put it back.
  await link(aside, file).catch(() => undefined);
  await rm(aside, { force: true });
  return false;
}

/**
 * Removes `file` if it still holds `token`: a lock taken over meanwhile (judged by its age from another host) is
 * no longer ours to remove. While its holder runs, nobody on its own host takes it over.
 */
export async function releaseLockFile(file: string, token: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => '');
  if (parse(text)?.token === token) await rm(file, { force: true });
}
