/**
 * How fast a model session runs, in seconds per padded input pixel, so a job's progress can say from its first
 * tile how long that tile should take (progress.ts). Most images are one or two tiles (the tile is sized by a
 * pixel budget, tiles.ts), so a rate learnt only from the job's own finished tiles would leave the bar at 0 %
 * for the whole image. Kept per session object (one per model, provider and precision in a worker thread) and
 * updated by each job's measured inference; a session that has never run is timed once on a small blank tile.
 */
import type { ModelSession } from '../inference/index.js';

/** Side of the probe tile: big enough that per-run overhead does not dominate, about 1 % of a budget tile. */
const PROBE_SIDE = 64;

/** The first run of a session pays the runtime's set-up (memory plans, kernel choice); the second does not. */
const PROBE_RUNS = 2;

const rates = new WeakMap<ModelSession, number>();

/** Keeps what a job measured (seconds per unit of its inference) for the next job on this session. */
export function recordRate(session: ModelSession, secondsPerUnit: number | undefined): void {
  if (secondsPerUnit !== undefined && Number.isFinite(secondsPerUnit) && secondsPerUnit > 0)
    rates.set(session, secondsPerUnit);
}

/**
 * The session's rate, timing one blank tile (grown to the model's window multiple) when none is known yet. A
 * first run also pays the runtime's one-time set-up, so the figure errs long: the bar then moves slower than
 * the tile and catches up when it ends, never ahead of the work. A model that refuses the probe tile leaves the
 * rate unknown (the bar then moves tile by tile, as before).
 */
export async function sessionRate(session: ModelSession, window: number): Promise<number | undefined> {
  const known = rates.get(session);
  if (known !== undefined) return known;
  const side = Math.ceil(PROBE_SIDE / Math.max(1, window)) * Math.max(1, window);
  try {
    // A session with 8-bit ends is timed on them: that is how 8-bit images run, and a float run would load the
    // model's plain graph just for the probe.
    const probe = session.runBytes
      ? () => session.runBytes!(new Uint8Array(3 * side * side), side, side)
      : () => session.run(new Float32Array(3 * side * side), 1, side, side);
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < PROBE_RUNS; i++) {
      const start = performance.now();
      await probe();
      best = Math.min(best, performance.now() - start);
    }
    recordRate(session, best / 1000 / (side * side));
    return rates.get(session);
  } catch {
    return undefined;
  }
}
