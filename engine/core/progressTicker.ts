/**
 * Moves a job's progress through a model run on the pool's thread. A run holds its worker thread for the whole
 * tile (onnxruntime's run is one native call) and most images are one or two tiles, so the worker's own reports
 * come seconds apart; it announces each run with the step it should make (pipeline/progress.ts), and this ticks
 * through that step from the caller's free thread: linear in time up to 90 % of the step's estimate, then ever
 * more slowly toward its end, which only the worker's next report passes. Fractions never go backwards.
 */
import type { CoreProgress } from './job.js';
import type { ProgressStep } from './pipeline/progress.js';

export const TICK_MS = 250;

export interface ProgressTicker {
  /** A report from the worker: passed on (never below what was shown), and its step, if any, ticked through. */
  report(fraction: number, etaSeconds?: number, step?: ProgressStep): void;
  /** No more ticks (the job ended, was cancelled, or its worker died). */
  stop(): void;
}

export interface TickerClock {
  /** Seconds. */
  now(): number;
  /** Calls `fn` every `ms` until the returned function is called; must not keep the process alive. */
  every(ms: number, fn: () => void): () => void;
}

const realClock: TickerClock = {
  now: () => performance.now() / 1000,
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};

/**
 * Share of a step shown after `x` of its estimated time: x until 0.9, then approaching 1 without reaching it
 * (hyperbolically, with the same value and slope at 0.9, so a run twice as long as estimated still moves).
 */
export function stepShare(x: number): number {
  if (!(x > 0)) return 0;
  return x <= 0.9 ? x : 1 - 0.01 / (x - 0.8);
}

export function progressTicker(listener: CoreProgress, clock: TickerClock = realClock): ProgressTicker {
  let last = 0;
  let stopTicks: (() => void) | undefined;
  const halt = () => {
    stopTicks?.();
    stopTicks = undefined;
  };
  return {
    report(fraction, etaSeconds, step) {
      halt();
      last = Math.max(last, fraction);
      listener(last, etaSeconds);
      if (!step || !(step.seconds > 0) || !(step.until > last)) return;
      const from = last;
      const start = clock.now();
      stopTicks = clock.every(TICK_MS, () => {
        const share = stepShare((clock.now() - start) / step.seconds);
        const f = from + (step.until - from) * share;
        if (f <= last) return;
        last = f;
        listener(f, etaSeconds === undefined ? undefined : Math.max(0, Math.round(etaSeconds - step.seconds * share)));
      });
    },
    stop: halt,
  };
}
