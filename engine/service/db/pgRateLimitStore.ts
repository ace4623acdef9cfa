/**
 * The rate limit's counts on PostgreSQL (engine/server/rateLimit.ts), so `--rate-limit` holds across every
 * server process on one database instead of per process. Fixed windows aligned to the clock (all processes agree on the
 * window without talking to each other); an upsert counts and reads the hits atomically.
 */
import type { Pool } from './postgres.js';

/** A request counted: hits of its key in the current window (this one included), ms until the window ends. */
export interface RateCount {
  current: number;
  ttl: number;
}

/** Counts shared by several processes: one hit of `key`, answered with its window's count. */
export interface SharedRateStore {
  incr(key: string, callback: (error: Error | null, result?: RateCount) => void): void;
}

/** Windows that ended this long ago are deleted now and then (every PRUNE_EVERY counts per process). */
const PRUNE_EVERY = 1000;

export function pgRateLimitStore(pool: Pool, windowMs: number): SharedRateStore {
  let counted = 0;
  const prune = (now: number) => {
    void pool.query('DELETE FROM rate_limits WHERE window_start < $1', [now - 2 * windowMs]).catch(() => undefined);
  };

  type Callback = (error: Error | null, result?: RateCount) => void;
  /**
   * Requests of one key that arrive while its upsert is in flight wait and are counted by the next upsert
   * together (hits + n): one statement per key at a time instead of one per request, which otherwise queue
   * on that row's lock. Still exact: the i-th of a batch of n is told (hits after the upsert) − n + i.
   */
  const waiting = new Map<string, Callback[]>();
  const inFlight = new Set<string>();

  const flush = (key: string): void => {
    const batch = waiting.get(key) ?? [];
    waiting.delete(key);
    if (batch.length === 0) return;
    inFlight.add(key);
    const now = Date.now();
    const windowStart = Math.floor(now / windowMs) * windowMs;
    counted += batch.length;
    if (counted >= PRUNE_EVERY) {
      counted = 0;
      prune(now);
    }
    const n = batch.length;
    pool
      .query<{ hits: number }>(
        `INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET
           hits = CASE WHEN rate_limits.window_start = EXCLUDED.window_start THEN rate_limits.hits + EXCLUDED.hits ELSE EXCLUDED.hits END,
           window_start = EXCLUDED.window_start
         RETURNING hits`,
        [key, windowStart, n],
      )
      .then(
        (r) => {
          const hits = r.rows[0]?.hits ?? n;
          const ttl = windowStart + windowMs - now;
          batch.forEach((cb, i) => cb(null, { current: hits - n + i + 1, ttl }));
        },
        (e: Error) => batch.forEach((cb) => cb(e)),
      )
      .finally(() => {
        inFlight.delete(key);
        flush(key);
      });
  };

  return {
    incr(key: string, callback: Callback): void {
      const list = waiting.get(key);
      if (list) list.push(callback);
      else waiting.set(key, [callback]);
      if (!inFlight.has(key)) flush(key);
    },
  };
}
