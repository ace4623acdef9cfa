/**
 * The per-key request limit (`--rate-limit` requests per `--rate-limit-window`): fixed windows, counted per
 * X-API-Key digest (many users may share a NAT), or per IP for requests without a key (part URLs,
 * downloads). Successful answers carry x-ratelimit-limit / -remaining / -reset; the request past the limit
 * is answered 429 with the contract's sentence and Retry-After.
 *
 * Every request, status polls included, goes through here, so the in-memory count is synchronous: a map
 * look-up and an increment, no promise, no LRU bookkeeping (what @fastify/rate-limit cost per poll). A shared
 * store (`--db`: every process on the database counts together) answers through a callback.
 */
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { errors, type ContractError } from '../contract/index.js';
import type { RateCount, SharedRateStore } from '../service/db/pgRateLimitStore.js';
import { keyDigestOf } from './auth.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route is not counted (operator probes). */
    rateLimit?: boolean;
  }
}

/** Keys kept in memory at most; past it, ended windows go first, then the oldest keys. */
const MAX_KEYS = 100_000;

/** Fixed windows per key, in this process's memory: a window starts at its key's first request. */
export class LocalRateCounter {
  private readonly windows = new Map<string, { start: number; hits: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxKeys = MAX_KEYS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request of `key`; answers its window's count and the ms left in it. */
  hit(key: string): RateCount {
    const t = this.now();
    let w = this.windows.get(key);
    if (!w) {
      if (this.windows.size >= this.maxKeys) this.makeRoom(t);
      w = { start: t, hits: 0 };
      this.windows.set(key, w);
    } else if (t >= w.start + this.windowMs) {
      w.start = t;
      w.hits = 0;
    }
    w.hits++;
    return { current: w.hits, ttl: w.start + this.windowMs - t };
  }

  get size(): number {
    return this.windows.size;
  }

  private makeRoom(t: number): void {
    for (const [key, w] of this.windows) if (t >= w.start + this.windowMs) this.windows.delete(key);
    // Still full: the keys counted first give way (a flood of fresh keys cannot grow memory without bound).
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}

export interface RateLimitOptions {
  max: number;
  windowMs: number;
  /** Shared by the processes on one database; absent: counted in this process's memory. */
  shared?: SharedRateStore;
}

/** The counter key of a request's X-API-Key digest, or of its address when it has no key. */
export function rateKeyOf(digest: string | undefined, ip: string): string {
  // Hashed: the counter's memory never holds credentials.
  return digest ? `k:${digest}` : `ip:${ip}`;
}

export interface RateLimit {
  /** The in-memory count, synchronous; absent with a shared store. */
  readonly local: LocalRateCounter | undefined;
  /** Sets the x-ratelimit headers of a counted request; answers the 429 refusal when it is over the limit. */
  decide(setHeader: (name: string, value: string) => void, count: RateCount): ContractError | undefined;
}

/**
 * Counts every route's requests (unless its config says `rateLimit: false`). The hook is appended to each
 * route's own onRequest hooks, so authentication answers first, as before.
 */
export function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): RateLimit {
  const maxText = String(opts.max);
  const decide: RateLimit['decide'] = (setHeader, count) => {
    const reset = String(Math.max(0, Math.ceil(count.ttl / 1000)));
    setHeader('x-ratelimit-limit', maxText);
    setHeader('x-ratelimit-reset', reset);
    if (count.current <= opts.max) {
      setHeader('x-ratelimit-remaining', String(opts.max - count.current));
      return undefined;
    }
    setHeader('x-ratelimit-remaining', '0');
    setHeader('retry-after', reset);
    return errors.rateLimited();
  };
  const local = opts.shared ? undefined : new LocalRateCounter(opts.windowMs);
  const shared = opts.shared;
  const hook: onRequestHookHandler = (request, reply, done) => {
    const key = rateKeyOf(keyDigestOf(request), request.ip);
    const setHeader = (name: string, value: string) => void reply.header(name, value);
    if (local) {
      done(decide(setHeader, local.hit(key)));
      return;
    }
    // A shared store that cannot be reached must not turn every request into a 500: authentication needs
    // the same database and answers for itself.
    shared!.incr(key, (error, count) => done(error || !count ? undefined : decide(setHeader, count)));
  };
  app.addHook('onRoute', (route) => {
    if (route.config?.rateLimit === false) return;
    const own = route.onRequest;
    route.onRequest = own === undefined ? [hook] : Array.isArray(own) ? [...own, hook] : [own, hook];
  });
  return { local, decide };
}
