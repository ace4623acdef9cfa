/**
 * Job progress that means something on long jobs: the fraction is time-weighted across the tiles and the
 * encode, and comes with an ETA.
 *
 * Inference is measured as it goes (seconds per padded tile pixel so far × pixels left); before the first tile
 * is measured, a rate the caller already knows for this model session (runRate.ts) stands in. A model run holds
 * its thread for the whole tile (onnxruntime's run is one native call), so nothing here can tick during it:
 * instead each run is announced with the step it should make (`ProgressStep`: up to which fraction, in about
 * how many seconds) and a listener on a free thread moves the bar through it (progressTicker.ts). The encode cannot
 * report progress (one native call), so its share is estimated from the output size and a per-format rate,
 * and the bar moves through it on a timer, slowing as the estimate runs out but never reaching 1 before the
 * file is in place. Fractions never go backwards.
 */
import type { SaveImageAs } from '../../contract/index.js';

/**
 * A model run has just started: if the rate holds, the fraction reaches `until` in `seconds`. Only a hint for
 * a listener that can tick while the run holds the worker's thread; the next real report always follows.
 */
export interface ProgressStep {
  until: number;
  seconds: number;
}

/** A step seen through a pass's share of a longer job (fraction ↦ offset + weight·fraction). */
export function stepWithin(step: ProgressStep | undefined, offset: number, weight: number): ProgressStep | undefined {
  return step ? { until: offset + weight * step.until, seconds: step.seconds } : undefined;
}

export type ProgressListener = (fraction: number, etaSeconds?: number, step?: ProgressStep) => void;

/**
 * Output megapixels per second of one encode on a laptop-class core (sharp/libvips; PNG at zlib level 1–3,
 * JPEG at quality ≥ 90, WebP at its default effort). Only the ETA's encode share depends on these.
 */
const ENCODE_MPS: Readonly<Record<SaveImageAs, number>> = { png: 25, jpg: 40, webp: 3 };
const TICK_MS = 250;

export class JobProgress {
  private last = 0;
  private doneUnits = 0;
  private inferStart: number | undefined;
  private inferSeconds = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly encodeSeconds: number;

  constructor(
    private readonly listener: ProgressListener | undefined,
    private readonly totalUnits: number,
    outputPixels: number,
    format: SaveImageAs,
    private readonly now: () => number = () => performance.now() / 1000,
    /** Seconds per unit this session took before (runRate.ts); absent: no estimate before the first tile. */
    private readonly priorSecondsPerUnit?: number,
  ) {
    this.encodeSeconds = outputPixels / 1e6 / ENCODE_MPS[format];
  }

  private emit(fraction: number, eta?: number, step?: ProgressStep): void {
    // Never a step backwards, whatever the estimates do; 1 only from done().
    const f = Math.min(0.99, fraction);
    if (f < this.last) return;
    this.last = f;
    const whole = eta === undefined ? undefined : Math.max(0, Math.round(eta));
    if (step) this.listener?.(f, whole, { until: Math.max(f, Math.min(0.99, step.until)), seconds: step.seconds });
    else this.listener?.(f, whole);
  }

  /** Seconds per unit measured so far in this job, else the prior; undefined while neither is known. */
  secondsPerUnit(): number | undefined {
    if (this.doneUnits > 0 && this.inferStart !== undefined) return (this.now() - this.inferStart) / this.doneUnits;
    return this.priorSecondsPerUnit;
  }

  /**
   * A model run over `units` starts now: reports where the job stands with the step this run should make, when
   * a rate is known (the prior before the first tile, this job's own after it).
   */
  runStarting(units: number): void {
    this.beginTiles();
    const rate = this.secondsPerUnit();
    if (rate === undefined || !(rate > 0)) return;
    const elapsed = this.now() - (this.inferStart ?? 0);
    const total = rate * this.totalUnits + this.encodeSeconds;
    if (!(total > 0)) return;
    const seconds = units * rate;
    this.emit(elapsed / total, total - elapsed, { until: (elapsed + seconds) / total, seconds });
  }

  start(): void {
    this.emit(0);
  }

  /** Inference starts with the first tile (decode and model loading come before it and are not timed). */
  beginTiles(): void {
    this.inferStart ??= this.now();
  }

  tileDone(units: number): void {
    this.beginTiles();
    this.doneUnits += units;
    const elapsed = this.now() - (this.inferStart ?? 0);
    const projected = this.doneUnits > 0 ? (elapsed * this.totalUnits) / this.doneUnits : 0;
    const total = projected + this.encodeSeconds;
    this.emit(total > 0 ? elapsed / total : 0, total - elapsed);
  }

  /** Starts the encode's timer; the returned function stops it. */
  beginEncode(): () => void {
    this.inferSeconds = this.inferStart === undefined ? 0 : this.now() - this.inferStart;
    const start = this.now();
    const tick = () => {
      const spent = this.now() - start;
      // Past the estimate the remaining share shrinks geometrically instead of stalling at a fixed point.
      const expected = Math.max(this.encodeSeconds, spent * 1.1);
      const total = this.inferSeconds + expected;
      this.emit(total > 0 ? (this.inferSeconds + spent) / total : 0, expected - spent);
    };
    tick();
    this.timer = setInterval(tick, TICK_MS);
    this.timer.unref();
    return () => clearInterval(this.timer);
  }

  done(): void {
    clearInterval(this.timer);
    this.last = 1;
    this.listener?.(1, 0);
  }
}
