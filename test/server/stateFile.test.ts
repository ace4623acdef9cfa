import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStateFile } from '../../engine/service/accounts/jsonStateFile.js';
import { withFileLock } from '../../engine/service/storage/fileLock.js';
import { assertNotOwned, FolderInUseError, takeFolder } from '../../engine/service/storage/folderOwner.js';
import {
  createLockFile,
  holderGone,
  lockRecord,
  readLockFile,
  removeLockIf,
} from '../../engine/service/storage/lockOwner.js';

/** The PID of a process that has ended. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

/** A process that runs until killed, and its PID. */
function liveProcess(): { pid: number; stop(): void } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return { pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

const future = () => new Date(Date.now() + 3_600_000);

interface Counter {
  n: number;
}
const parse = (raw: unknown): Counter => {
  if (typeof raw !== 'object' || raw === null || typeof (raw as Counter).n !== 'number') throw new Error('corrupt');
  return raw as Counter;
};

describe('JSON state file (the embedded accounts store)', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-state-'));
    file = path.join(dir, 'state.json');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('two handles on one file (as `crisp users` beside `crisp serve`) lose no update; owner-only, no temp left', async () => {
    const open = () => openStateFile<Counter>({ file, initial: () => ({ n: 0 }), parse });
    const [a, b] = await Promise.all([open(), open()]);
    // Each handle has its own in-process mutex, so the two only meet at the lock file, like two processes.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).update((d) => {
          d.n += 1;
        }),
      ),
    );
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ n: 40 });
    await a.refresh();
    expect(a.current().n).toBe(40);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('takes over a lock left by a killed process once it is stale, and waits on a fresh one', async () => {
    const s = await openStateFile<Counter>({ file, initial: () => ({ n: 0 }), parse });
    const lock = `${file}.lock`;
    await writeFile(lock, '');
    const old = new Date(Date.now() - 60_000);
    await utimes(lock, old, old);
    await s.update((d) => {
      d.n = 7;
    });
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ n: 7 });
  });

  it('a corrupt file is an error, never a silent reset of balances; a failed update changes nothing', async () => {
    await writeFile(file, '{"n": "lots"}');
    await expect(openStateFile<Counter>({ file, initial: () => ({ n: 0 }), parse })).rejects.toThrow('corrupt');
    await writeFile(file, '{"n": 3}');
    const s = await openStateFile<Counter>({ file, initial: () => ({ n: 0 }), parse });
    await expect(
      s.update((d) => {
        d.n = 99;
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(s.current().n).toBe(3);
    expect(await readFile(file, 'utf8')).toBe('{"n": 3}');
  });
});

describe('locks that record their holder', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-lock-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('a lock file is created whole, with its holder; a second create finds it', async () => {
    const file = path.join(dir, 'x.lock');
    const mine = lockRecord({ role: 'test', port: 7 });
    expect(await createLockFile(file, mine)).toBe(true);
    expect(await createLockFile(file, lockRecord())).toBe(false);
    const found = await readLockFile(file);
    expect(found?.record).toEqual(mine);
    expect(found?.record).toMatchObject({ pid: process.pid, host: os.hostname(), role: 'test', port: 7 });
    expect(await readdir(dir)).toEqual(['x.lock']);
  });

  it('tells a dead holder, a live one, this process and one it cannot judge apart', async () => {
    const host = os.hostname();
    const live = liveProcess();
    try {
      expect(holderGone({ pid: await deadPid(), host, token: 't', since: 0 })).toBe(true);
      expect(holderGone({ pid: live.pid, host, token: 't', since: 0 })).toBe(false);
      expect(holderGone(lockRecord())).toBe(false);
      expect(holderGone({ pid: live.pid, host: `${host}-elsewhere`, token: 't', since: 0 })).toBeUndefined();
      expect(holderGone(undefined)).toBeUndefined();
      if (lockRecord().started !== undefined) {
        // Linux: this PID, but another start time — an earlier process that had the same PID (a container's PID 1).
        expect(holderGone({ ...lockRecord(), started: '1' })).toBe(true);
        expect(holderGone({ pid: live.pid, host, started: '1', token: 't', since: 0 })).toBe(true);
      }
    } finally {
      live.stop();
    }
  });

  it('takes a lock over only if it is still the one judged gone (compare-and-swap)', async () => {
    const file = path.join(dir, 'x.lock');
    await createLockFile(file, { pid: await deadPid(), host: os.hostname(), token: 'dead', since: 0 });
    const judged = (await readLockFile(file))!;
    // Someone else took it over between our read and our removal: their lock stays.
    await rm(file);
    const theirs = lockRecord();
    await createLockFile(file, theirs);
    expect(await removeLockIf(file, judged)).toBe(false);
    expect((await readLockFile(file))?.record).toEqual(theirs);
    expect(await readdir(dir)).toEqual(['x.lock']);
    // The judged one itself goes.
    expect(await removeLockIf(file, (await readLockFile(file))!)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });

  it("withFileLock takes a dead holder's lock at once, whatever its age, and waits for a live one", async () => {
    const file = path.join(dir, 'state.lock');
    await writeFile(file, JSON.stringify({ pid: await deadPid(), host: os.hostname(), token: randomUUID(), since: 0 }));
    await utimes(file, future(), future());
    expect(await withFileLock(file, async () => 'ran', { waitMs: 60_000 })).toBe('ran');
    await expect(readLockFile(file)).resolves.toBeUndefined();

    const live = liveProcess();
    try {
      await writeFile(file, JSON.stringify({ pid: live.pid, host: os.hostname(), token: randomUUID(), since: 0 }));
      const old = new Date(Date.now() - 60_000);
      await utimes(file, old, old);
      // Old, but its holder runs: not taken over.
      await expect(withFileLock(file, async () => 'ran', { waitMs: 100 })).rejects.toThrow(
        new RegExp(`timed out waiting for .*state\\.lock \\(held by PID ${live.pid} on `),
      );
    } finally {
      live.stop();
    }
    // A lock from another host (a shared folder) is judged by its age, as before.
    await writeFile(file, JSON.stringify({ pid: 1, host: `${os.hostname()}-elsewhere`, token: 'x', since: 0 }));
    const old = new Date(Date.now() - 60_000);
    await utimes(file, old, old);
    expect(await withFileLock(file, async () => 'ran')).toBe('ran');
  });

  it('a data folder has one owner: a second one is refused with a sentence naming the first; a dead one is replaced', async () => {
    const first = await takeFolder(dir, { role: 'crisp serve', port: 8787 });
    const refused = await takeFolder(dir, { role: 'crisp serve', port: 8788 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FolderInUseError);
    expect((refused as Error).message).toMatch(
      new RegExp(
        `^the data folder .* is in use by crisp serve \\(PID ${process.pid}, port 8787, host [^,]+, since [^)]+\\); ` +
          'stop that process first or give this one another --data \\(nothing was changed\\)$',
      ),
    );
    await expect(assertNotOwned(dir, '--storage')).rejects.toThrow(/another --storage/);
    await first.release();
    await assertNotOwned(dir, '--storage');

    await writeFile(
      path.join(dir, 'owner.lock'),
      JSON.stringify({ pid: await deadPid(), host: os.hostname(), token: 'x', role: 'crisp serve', since: 0 }),
    );
    await utimes(path.join(dir, 'owner.lock'), future(), future());
    await assertNotOwned(dir, '--storage');
    const next = await takeFolder(dir, { role: 'crisp serve', port: 1 });
    expect((await readLockFile(path.join(dir, 'owner.lock')))?.record).toMatchObject({ pid: process.pid, port: 1 });
    await next.release();
    expect(await readdir(dir)).toEqual([]);
  });
});
