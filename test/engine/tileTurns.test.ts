/**
 * core's tile-turn arbiter (engine/core/tileTurns.ts): model runs of jobs with different keys alternate, a lone
 * key is never made to wait, and a failed run hands its turn on. Each run is a promise the test settles itself,
 * so the order is the arbiter's, not the machine's.
 */
import { describe, expect, it } from 'vitest';
import { TileTurns } from '../../engine/core/tileTurns.js';

/** A run the test ends when it chooses; `started` lists the runs in the order they were let in. */
function harness() {
  const started: string[] = [];
  const open = new Map<string, () => void>();
  const fail = new Map<string, (e: Error) => void>();
  const run = (name: string) => () =>
    new Promise<string>((resolve, reject) => {
      started.push(name);
      open.set(name, () => resolve(name));
      fail.set(name, reject);
    });
  const flush = async () => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { started, run, flush, end: (n: string) => open.get(n)!(), fail: (n: string) => fail.get(n)!(new Error(n)) };
}

describe('TileTurns', () => {
  it('lets a lone key run back to back', async () => {
    const turns = new TileTurns();
    const giant = turns.forKey('giant');
    const h = harness();
    const r0 = giant(h.run('g0'));
    await h.flush();
    expect(h.started).toEqual(['g0']);
    h.end('g0');
    expect(await r0).toBe('g0');
    const r1 = giant(h.run('g1'));
    await h.flush();
    expect(h.started).toEqual(['g0', 'g1']);
    h.end('g1');
    await r1;
  });

  it("alternates two keys' runs: the small job's tile goes before the giant's next one", async () => {
    const turns = new TileTurns();
    const giant = turns.forKey('user-a');
    const small = turns.forKey('user-b');
    const h = harness();
    const g0 = giant(h.run('g0'));
    await h.flush();
    // While g0 runs, the small job asks for its first tile and the giant for its next.
    const s0 = small(h.run('s0'));
    const g1 = giant(h.run('g1'));
    await h.flush();
    expect(h.started).toEqual(['g0']);
    expect(turns.queued).toBe(2);
    h.end('g0');
    await g0;
    await h.flush();
    expect(h.started).toEqual(['g0', 's0']);
    const s1 = small(h.run('s1'));
    h.end('s0');
    await s0;
    await h.flush();
    // The giant waited its turn; the small job's second tile waits for the giant's.
    expect(h.started).toEqual(['g0', 's0', 'g1']);
    h.end('g1');
    await g1;
    await h.flush();
    expect(h.started).toEqual(['g0', 's0', 'g1', 's1']);
    h.end('s1');
    await s1;
    expect(turns.queued).toBe(0);
  });

  it('a failed run rejects its caller and hands the turn on', async () => {
    const turns = new TileTurns();
    const a = turns.forKey('a');
    const b = turns.forKey('b');
    const h = harness();
    const a0 = a(h.run('a0'));
    const b0 = b(h.run('b0'));
    await h.flush();
    h.fail('a0');
    await expect(a0).rejects.toThrow('a0');
    await h.flush();
    expect(h.started).toEqual(['a0', 'b0']);
    h.end('b0');
    expect(await b0).toBe('b0');
  });
});
