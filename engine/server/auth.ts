/**
 * X-API-Key authentication, run as the route's first hook (before the body is parsed, so an
 * unauthenticated client cannot make the server buffer a large upload). Answers follow the spec:
 * missing key → the endpoint's 400 ("Bad Request: Missing User" on start-task, "… Missing User ID"
 * elsewhere); unknown key → 404 "User not found" on start-task, 401 "Unauthorized" elsewhere.
 */
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Caller } from '../service/api.js';
import type { Account, AccountStore } from '../service/accounts/accountStore.js';
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { errors } from '../contract/index.js';
import type { RouteConfig } from './errorMapping.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on authenticated routes. */
    caller: Caller | null;
    /** sha256 of the X-API-Key, computed once per request (rate limiter and auth share it); '' without a key. */
    keyDigest: string | null;
  }
}

/** The hex sha256 of the request's X-API-Key (the store's own key digest), computed at most once per request. */
export function keyDigestOf(request: FastifyRequest): string | undefined {
  if (request.keyDigest === null) request.keyDigest = digestOfKey(apiKeyOf(request)) ?? '';
  return request.keyDigest === '' ? undefined : request.keyDigest;
}

/** The digest of a key as sent; undefined for none, or one longer than any key (refused without hashing). */
export function digestOfKey(key: string | undefined): string | undefined {
  // The same hex sha256 as accounts/apiKey.ts hashApiKey, by the one-shot hash (no Hash object per request).
  return key && key.length <= MAX_KEY_LENGTH ? hash('sha256', key, 'hex') : undefined;
}

/** No key is this long; longer ones are refused without hashing (bounds per-request work). */
const MAX_KEY_LENGTH = 200;

export interface KeyCacheOptions {
  /** How long a key → account answer is reused before the store is asked again. */
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}

export const DEFAULT_KEY_CACHE: KeyCacheOptions = { ttlMs: 30_000, maxEntries: 10_000 };

/** Resolves a key to its account: `cached` answers a key seen lately at once, the call asks the store if needed. */
export interface KeyAuthenticator {
  (key: string, digest: string): Promise<Account | undefined>;
  /** The caller of a key known and within its TTL, without asking the store; undefined otherwise. */
  cached(digest: string): Caller | undefined;
}

/**
 * Known keys' accounts, by key digest, kept for ttlMs: a poll loop costs no store lookup (a database
 * query with `--db`). Only successful lookups are kept, so a user added while the server runs works at
 * once; the cache holds digests, never keys.
 */
export function cachedAuthenticate(
  accounts: AccountStore,
  opts: KeyCacheOptions = DEFAULT_KEY_CACHE,
): KeyAuthenticator {
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { account: Account; caller: Caller; until: number }>();
  const authenticate = async (key: string, digest: string): Promise<Account | undefined> => {
    const hit = cache.get(digest);
    const t = now();
    if (hit && hit.until > t) return hit.account;
    const account = await accounts.authenticate(key);
    if (!account) {
      cache.delete(digest);
      return undefined;
    }
    if (cache.size >= opts.maxEntries) cache.delete(cache.keys().next().value as string);
    cache.delete(digest);
    // The caller object is made once per entry: every request of the key shares it (callers only read it).
    cache.set(digest, { account, caller: { userId: account.userId, email: account.email }, until: t + opts.ttlMs });
    return account;
  };
  return Object.assign(authenticate, {
    cached(digest: string): Caller | undefined {
      const hit = cache.get(digest);
      return hit && hit.until > now() ? hit.caller : undefined;
    },
  });
}

export function apiKeyOf(request: FastifyRequest): string | undefined {
  return apiKeyFrom(request.headers);
}

/** The X-API-Key of a request's headers, trimmed; undefined when absent or blank. */
export function apiKeyFrom(headers: IncomingHttpHeaders): string | undefined {
  const v = headers['x-api-key'];
  const key = Array.isArray(v) ? v[0] : v;
  return key && key.trim() !== '' ? key.trim() : undefined;
}

/**
 * The auth hook. A key seen lately is answered synchronously (no promise per request: status polls are the
 * hot path); any other goes to the store.
 */
export function requireApiKey(authenticate: KeyAuthenticator): onRequestHookHandler {
  return (request, _reply, done) => {
    const startTask = (request.routeOptions.config as RouteConfig | undefined)?.endpoint === 'start-task';
    const key = apiKeyOf(request);
    if (!key) return done(startTask ? errors.missingUser() : errors.missingUserId());
    const digest = keyDigestOf(request);
    const known = digest ? authenticate.cached(digest) : undefined;
    if (known) {
      request.caller = known;
      return done();
    }
    const refuse = () => done(startTask ? errors.userNotFound() : errors.unauthorized());
    if (!digest) return refuse();
    authenticate(key, digest).then(
      (account) => {
        if (!account) return refuse();
        request.caller = authenticate.cached(digest) ?? { userId: account.userId, email: account.email };
        done();
      },
      (e: Error) => done(e),
    );
  };
}

export function callerOf(request: FastifyRequest): Caller {
  // Routes using this are registered with requireApiKey; reaching here without a caller is a bug.
  if (!request.caller) throw new Error('route reached without authentication');
  return request.caller;
}
