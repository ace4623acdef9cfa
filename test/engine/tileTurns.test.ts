/**
 * core's tile-turn arbiter (engine/core/tileTurns.ts): model runs of jobs with different keys alternate, a lone
 * key is never made to wait, another key's job arriving (before its first run) or finishing (encoding) is
 * waited for, and a failed or abandoned job hands its turn on. Each run is a promise the test settles itself, so the order is the arbiter's, not the machine's.
 */
import { describe, expect, it } from 'vitest';
import { TileTurns } from '../../engine/core/tileTurns.js';

/** Runs the test ends when it chooses; `started` lists them in the order they were let in. */
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
  /** Lets every pending step settle (the arbiter passes one setImmediate before each turn). */
  const flush = async () => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  };
  return { started, run, flush, end: (n: string) => open.get(n)!(), fail: (n: string) => fail.get(n)!(new Error(n)) };
}

describe('TileTurns', () => {
  it('lets a lone key run back to back', async () => {
    const turns = new TileTurns();
    const giant = turns.join('giant');
    const h = harness();
    const r0 = giant.turn(h.run('g0'));
    await h.flush();
    expect(h.started).toEqual(['g0']);
    h.end('g0');
    expect(await r0).toBe('g0');
    const r1 = giant.turn(h.run('g1'));
    await h.flush();
    expect(h.started).toEqual(['g0', 'g1']);
    h.end('g1');
    await r1;
  });

  it("alternates two keys' runs: the small job's tile goes before the giant's next one", async () => {
    const turns = new TileTurns();
    const giant = turns.join('user-a');
    const h = harness();
    const g0 = giant.turn(h.run('g0'));
    await h.flush();
    // While g0 runs, the small job joins and asks for its first tile, and the giant for its next.
    const small = turns.join('user-b');
    const s0 = small.turn(h.run('s0'));
    const g1 = giant.turn(h.run('g1'));
    await h.flush();
    expect(h.started).toEqual(['g0']);
    expect(turns.queued).toBe(2);
    h.end('g0');
    await g0;
    await h.flush();
    expect(h.started).toEqual(['g0', 's0']);
    const s1 = small.turn(h.run('s1'));
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
    small.leave();
    giant.leave();
    expect(turns.queued).toBe(0);
  });

  it("waits for a newcomer of another key to ask for its first run before the giant's next one", async () => {
    const turns = new TileTurns();
    const giant = turns.join('user-a');
    const h = harness();
    const g0 = giant.turn(h.run('g0'));
    await h.flush();
    // The newcomer joined (it is reading its image) but has not asked yet.
    const small = turns.join('user-b');
    h.end('g0');
    await g0;
    const g1 = giant.turn(h.run('g1'));
    await h.flush();
    expect(h.started).toEqual(['g0']);
    const s0 = small.turn(h.run('s0'));
    await h.flush();
    expect(h.started).toEqual(['g0', 's0']);
    h.end('s0');
    await s0;
    small.leave();
    await h.flush();
    expect(h.started).toEqual(['g0', 's0', 'g1']);
    h.end('g1');
    await g1;
  });

  it("holds the giant's next run while the small job of another key finishes (encodes), until it leaves", async () => {
    const turns = new TileTurns();
    const giant = turns.join('user-a');
    const small = turns.join('user-b');
    const h = harness();
    const s0 = small.turn(h.run('s0'));
    const g0 = giant.turn(h.run('g0'));
    await h.flush();
    expect(h.started).toEqual(['s0']);
    // The small job's only tile is done: it encodes now.
    small.finishing();
    h.end('s0');
    await s0;
    await h.flush();
    expect(h.started).toEqual(['s0']);
    small.leave();
    await h.flush();
    expect(h.started).toEqual(['s0', 'g0']);
    h.end('g0');
    await g0;
  });

  it('a newcomer that ends before its first run (failed, cancelled) frees the waiting turn', async () => {
    const turns = new TileTurns();
    const giant = turns.join('user-a');
    const small = turns.join('user-b');
    const h = harness();
    const g0 = giant.turn(h.run('g0'));
    await h.flush();
    expect(h.started).toEqual([]);
    small.leave();
    await h.flush();
    expect(h.started).toEqual(['g0']);
    h.end('g0');
    expect(await g0).toBe('g0');
  });

  it('a job of the same key arriving never holds the running one', async () => {
    const turns = new TileTurns();
    const first = turns.join('');
    turns.join('');
    const h = harness();
    const r = first.turn(h.run('a0'));
    await h.flush();
    expect(h.started).toEqual(['a0']);
    h.end('a0');
    await r;
  });

  it('a failed run rejects its caller and hands the turn on', async () => {
    const turns = new TileTurns();
    const a = turns.join('a');
    const b = turns.join('b');
    const h = harness();
    const a0 = a.turn(h.run('a0'));
    const b0 = b.turn(h.run('b0'));
    await h.flush();
    h.fail('a0');
    await expect(a0).rejects.toThrow('a0');
    await h.flush();
    expect(h.started).toEqual(['a0', 'b0']);
    h.end('b0');
    expect(await b0).toBe('b0');
  });
});
