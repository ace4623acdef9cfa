/**
 * The bottom bar's "about N left", smoothed and hidden until it can be trusted. The raw estimate
 * (elapsed × remaining% / done%) swings whenever progress arrives in steps — a Cloud task reports
 * 10 % for seconds, then 70 % — so the clock grows while progress stands still, then collapses
 * (19 → 38 → 57 → 4.7 s). Here the shown value counts down between samples and moves toward each new
 * raw estimate only gradually (exponential smoothing with a time constant), and it is shown only once
 * several consecutive raw estimates agree with the running value. Time is passed in, never read, so
 * tests script the clock.
 */

import { etaMs } from './statusModel.js';

export interface EtaOptions {
  /** Smoothing time constant: a new raw estimate moves the shown one by 1 − e^(−dt/τ). */
  tauMs: number;
  /** Consecutive samples whose raw estimate lies within `agreement` of the running value before showing it. */
  stableSamples: number;
  /** Relative distance counted as agreement (0.35 = within 35 %). */
  agreement: number;
  /** Nothing is shown before the run has gone on this long. */
  minElapsedMs: number;
}

export const DEFAULT_ETA_OPTIONS: EtaOptions = { tauMs: 6_000, stableSamples: 3, agreement: 0.35, minElapsedMs: 3_000 };

export interface EtaEstimator {
  /** Feeds the batch percent seen at `now` (ms); answers the remaining ms to show, or null while unsure. */
  sample(now: number, percent: number): number | null;
}

export function createEtaEstimator(startedAt: number, options: Partial<EtaOptions> = {}): EtaEstimator {
  const o = { ...DEFAULT_ETA_OPTIONS, ...options };
  let smoothed: number | null = null;
  let lastAt = startedAt;
  let agreeing = 0;
  let shown = false;
  return {
    sample(now, percent) {
      const elapsed = now - startedAt;
      if (percent >= 100) return null;
      const raw = etaMs(elapsed, percent);
      if (raw === null) {
        lastAt = now;
        return null;
      }
      const dt = Math.max(0, now - lastAt);
      lastAt = now;
      if (smoothed === null) {
        smoothed = raw;
        return null;
      }
      if (dt === 0) return shown ? Math.max(0, smoothed) : null;
      // Between samples the clock simply runs down; the new evidence then pulls it part of the way.
      const predicted = Math.max(0, smoothed - dt);
      const alpha = 1 - Math.exp(-dt / o.tauMs);
      const close = Math.abs(raw - predicted) <= o.agreement * Math.max(predicted, raw, 1000);
      // Until shown, the latest sample stands alone: the first whole percents of a long run are coarse (1 %
      // after 1 s reads 99 s left, 4 % after 3 s 72 s, of 64 s), and smoothing from them would show their error.
      smoothed = shown ? predicted + alpha * (raw - predicted) : raw;
      agreeing = close ? agreeing + 1 : 0;
      // Once trusted it stays (a value that comes and goes is worse than a steady one), for this run.
      if (!shown && agreeing >= o.stableSamples && elapsed >= o.minElapsedMs) shown = true;
      return shown ? Math.max(0, smoothed) : null;
    },
  };
}
