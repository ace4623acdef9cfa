import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStateFile } from '../../engine/service/accounts/jsonStateFile.js';

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
