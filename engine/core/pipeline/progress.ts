/**
 * Job progress that means something on long jobs: the fraction is time-weighted across the tiles and the
 * encode, and comes with an ETA.
 *
 * Inference is measured as it goes (seconds per padded tile pixel so far × pixels left). The encode cannot
 * report progress (one native call), so its share is estimated from the output size and a per-format rate,
 * and the bar moves through it on a timer, slowing as the estimate runs out but never reaching 1 before the
 * file is in place. Fractions never go backwards.
 */
import type { SaveImageAs } from '../../contract/index.js';

export type ProgressListener = (fraction: number, etaSeconds?: number) => void;

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
  ) {
    this.encodeSeconds = outputPixels / 1e6 / ENCODE_MPS[format];
  }

  private emit(fraction: number, eta?: number): void {
    // Never a step backwards, whatever the estimates do; 1 only from done().
    const f = Math.min(0.99, fraction);
    if (f < this.last) return;
    this.last = f;
    this.listener?.(f, eta === undefined ? undefined : Math.max(0, Math.round(eta)));
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
