/**
 * A store for @fastify/rate-limit on PostgreSQL, so `--rate-limit` holds across every server process on
 * one database instead of per process. Fixed windows aligned to the clock (all processes agree on the
 * window without talking to each other); one upsert per request counts and reads the hits atomically.
 */
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Pool } from './postgres.js';

/** Windows that ended this long ago are deleted now and then (every PRUNE_EVERY counts per process). */
const PRUNE_EVERY = 1000;

export function pgRateLimitStore(pool: Pool, windowMs: number): FastifyRateLimitStoreCtor {
  let counted = 0;
  const prune = (now: number) => {
    void pool.query('DELETE FROM rate_limits WHERE window_start < $1', [now - 2 * windowMs]).catch(() => undefined);
  };

  class PgRateLimitStore implements FastifyRateLimitStore {
    constructor(_options?: FastifyRateLimitOptions) {}

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void): void {
      const now = Date.now();
      const windowStart = Math.floor(now / windowMs) * windowMs;
      if (++counted % PRUNE_EVERY === 0) prune(now);
      pool
        .query<{ hits: number }>(
          `INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, $2, 1)
           ON CONFLICT (key) DO UPDATE SET
             hits = CASE WHEN rate_limits.window_start = EXCLUDED.window_start THEN rate_limits.hits + 1 ELSE 1 END,
             window_start = EXCLUDED.window_start
           RETURNING hits`,
          [key, windowStart],
        )
        .then(
          (r) => callback(null, { current: r.rows[0]?.hits ?? 1, ttl: windowStart + windowMs - now }),
          (e: Error) => callback(e),
        );
    }

    child(): FastifyRateLimitStore {
      return new PgRateLimitStore();
    }
  }
  return PgRateLimitStore;
}
