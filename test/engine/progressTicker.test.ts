/**
 * Progress inside a model run: the worker announces each run's step (JobProgress.runStarting), and the pool's
 * ticker moves the bar through it on its own thread. Scripted clocks: nothing here depends on machine speed.
 */
import { describe, expect, it } from 'vitest';
import { JobProgress, type ProgressStep } from '../../engine/core/pipeline/index.js';
import { progressTicker, stepShare, TICK_MS, type TickerClock } from '../../engine/core/progressTicker.js';

/** A clock the test advances; `every` runs its callback once per elapsed interval. */
function scriptedClock(): TickerClock & { advance(seconds: number): void; timers(): number } {
  let t = 0;
  const timers = new Set<{ fn: () => void; next: number; ms: number }>();
  return {
    now: () => t,
    every(ms, fn) {
      const timer = { fn, next: t + ms / 1000, ms };
      timers.add(timer);
      return () => timers.delete(timer);
    },
    advance(seconds) {
      const end = t + seconds;
      for (;;) {
        const due = [...timers].sort((a, b) => a.next - b.next)[0];
        if (!due || due.next > end + 1e-9) break;
        t = due.next;
        due.next += due.ms / 1000;
        due.fn();
      }
      t = end;
    },
    timers: () => timers.size,
  };
}

describe('the pool-side progress ticker', () => {
  it('moves linearly through a step, then ever slower toward its end, never reaching it', () => {
    const clock = scriptedClock();
    const seen: Array<[number, number | undefined]> = [];
    const ticker = progressTicker((f, eta) => seen.push([f, eta]), clock);
    // A run from 10 % that should reach 50 % in 8 s; 20 s left in the job when it starts.
    ticker.report(0.1, 20, { until: 0.5, seconds: 8 });
    expect(seen).toEqual([[0.1, 20]]);
    clock.advance(4);
    // Half the estimate: half the step, and the ETA 4 s lower.
    expect(seen.at(-1)![0]).toBeCloseTo(0.3, 9);
    expect(seen.at(-1)![1]).toBe(16);
    expect(seen.length).toBe(1 + (4 * 1000) / TICK_MS);
    clock.advance(60);
    const last = seen.at(-1)![0];
    expect(last).toBeLessThan(0.5);
    expect(last).toBeGreaterThan(0.49);
    const fractions = seen.map(([f]) => f);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(new Set(fractions).size).toBe(fractions.length);
    // Once past the estimate the ETA stops at what the step leaves (12 s), never below.
    expect(seen.at(-1)![1]).toBe(12);
  });

  it('a report from the worker ends the step; a lower one never moves the bar back', () => {
    const clock = scriptedClock();
    const seen: number[] = [];
    const ticker = progressTicker((f) => seen.push(f), clock);
    ticker.report(0, 10, { until: 0.6, seconds: 2 });
    clock.advance(1);
    expect(seen.at(-1)).toBeCloseTo(0.3, 9);
    // The tile took longer than estimated: the worker's re-projected fraction is lower than what was shown.
    ticker.report(0.25, 12);
    expect(seen.at(-1)).toBeCloseTo(0.3, 9);
    expect(clock.timers()).toBe(0);
    const n = seen.length;
    clock.advance(5);
    expect(seen.length).toBe(n);
    ticker.report(0.7, 3);
    expect(seen.at(-1)).toBe(0.7);
  });

  it('stop() ends the ticks (a cancelled or finished job)', () => {
    const clock = scriptedClock();
    const seen: number[] = [];
    const ticker = progressTicker((f) => seen.push(f), clock);
    ticker.report(0, 10, { until: 0.5, seconds: 5 });
    clock.advance(1);
    ticker.stop();
    const n = seen.length;
    clock.advance(10);
    expect(seen.length).toBe(n);
    expect(clock.timers()).toBe(0);
  });

  it('stepShare is continuous and below 1', () => {
    expect(stepShare(0)).toBe(0);
    expect(stepShare(0.5)).toBe(0.5);
    expect(stepShare(0.9)).toBeCloseTo(0.9, 12);
    expect(stepShare(0.9 + 1e-9)).toBeCloseTo(0.9, 6);
    expect(stepShare(1)).toBeLessThan(1);
    expect(stepShare(100)).toBeLessThan(1);
  });
});

describe('JobProgress announces each run', () => {
  it('with a prior rate, the first run comes with its step and an ETA before any tile is done', () => {
    let t = 0;
    const seen: Array<[number, number | undefined, ProgressStep | undefined]> = [];
    // 2 tiles of 1 MP at a known 2 µs per pixel: 2 s each; 4 MP of PNG output at 25 MP/s: 0.16 s of encode.
    const p = new JobProgress(
      (f, eta, step) => seen.push([f, eta, step]),
      2e6,
      4e6,
      'png',
      () => t,
      2e-6,
    );
    p.start();
    p.beginTiles();
    p.runStarting(1e6);
    expect(seen[1]![0]).toBe(0);
    expect(seen[1]![1]).toBe(4);
    expect(seen[1]![2]!.seconds).toBeCloseTo(2, 9);
    expect(seen[1]![2]!.until).toBeCloseTo(2 / 4.16, 9);
    t += 3; // slower than the prior: the job's own rate takes over
    p.tileDone(1e6);
    p.runStarting(1e6);
    const [f, , step] = seen.at(-1)!;
    expect(f).toBeCloseTo(3 / 6.16, 9);
    expect(step!.seconds).toBeCloseTo(3, 9);
    expect(step!.until).toBeCloseTo(6 / 6.16, 9);
  });

  it('without a rate, runs are not announced (the bar moves tile by tile)', () => {
    let t = 0;
    const seen: unknown[][] = [];
    const p = new JobProgress(
      (...a) => seen.push(a),
      2e6,
      4e6,
      'png',
      () => t,
    );
    p.start();
    p.beginTiles();
    p.runStarting(1e6);
    expect(seen).toEqual([[0, undefined]]);
    t += 1;
    p.tileDone(1e6);
    p.runStarting(1e6);
    expect(seen.at(-1)![2]).toMatchObject({ seconds: 1 });
  });
});
