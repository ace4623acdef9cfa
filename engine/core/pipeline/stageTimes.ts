/**
 * Where one image's time goes: milliseconds per pipeline stage, summed over the stage's occurrences (every tile's
 * run, every tile's stitch). Stages may overlap in time (a tile is stitched while the next one infers), so the
 * stages can add up to more than the image's wall time; `wall` is the whole upscale. Reported with every result
 * (the numbers cost a few performance.now() calls per tile) and printed by `npm run bench -- --only pipeline`.
 */
export const STAGES = [
  'probe',
  'session',
  'decode',
  'tileIn',
  'run',
  'tileOut',
  'resize',
  'faces',
  'metadata',
  /** Encoding straight into the output file, its flush and rename included (no separate write since issue 37). */
  'encode',
] as const;
export type Stage = (typeof STAGES)[number];
export type StageTimes = Partial<Record<Stage | 'wall', number>>;

export class StageClock {
  readonly times: StageTimes = {};
  private readonly start = performance.now();

  add(stage: Stage, ms: number): void {
    this.times[stage] = (this.times[stage] ?? 0) + ms;
  }

  /** Times `fn` (sync or async) under `stage`. */
  time<T>(stage: Stage, fn: () => T): T {
    const t0 = performance.now();
    const r = fn();
    if (r instanceof Promise) {
      return r.finally(() => this.add(stage, performance.now() - t0)) as T;
    }
    this.add(stage, performance.now() - t0);
    return r;
  }

  /** The stage totals, rounded to 0.1 ms, with the wall time so far. */
  finish(): StageTimes {
    const out: StageTimes = {};
    for (const [k, v] of Object.entries(this.times)) out[k as Stage] = Math.round(v * 10) / 10;
    out.wall = Math.round((performance.now() - this.start) * 10) / 10;
    return out;
  }
}
