/**
 * X-API-Key authentication, run as the route's first hook (before the body is parsed, so an
 * unauthenticated client cannot make the server buffer a large upload). Answers follow the spec:
 * missing key → the endpoint's 400 ("Bad Request: Missing User" on start-task, "… Missing User ID"
 * elsewhere); unknown key → 404 "User not found" on start-task, 401 "Unauthorized" elsewhere.
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Caller } from '../service/api.js';
import type { Account, AccountStore } from '../service/accounts/accountStore.js';
import { hash } from 'node:crypto';
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
  if (request.keyDigest === null) {
    const key = apiKeyOf(request);
    // The same hex sha256 as accounts/apiKey.ts hashApiKey, by the one-shot hash (no Hash object per request).
    request.keyDigest = key && key.length <= MAX_KEY_LENGTH ? hash('sha256', key, 'hex') : '';
  }
  return request.keyDigest === '' ? undefined : request.keyDigest;
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

/**
 * Known keys' accounts, by key digest, kept for ttlMs: a poll loop costs no store lookup (a database
 * query with `--db`). Only successful lookups are kept, so a user added while the server runs works at
 * once; the cache holds digests, never keys.
 */
export function cachedAuthenticate(accounts: AccountStore, opts: KeyCacheOptions = DEFAULT_KEY_CACHE) {
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { account: Account; until: number }>();
  return async (key: string, digest: string): Promise<Account | undefined> => {
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
    cache.set(digest, { account, until: t + opts.ttlMs });
    return account;
  };
}

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const v = request.headers['x-api-key'];
  const key = Array.isArray(v) ? v[0] : v;
  return key && key.trim() !== '' ? key.trim() : undefined;
}

export function requireApiKey(
  accounts: AccountStore,
  cache: KeyCacheOptions = DEFAULT_KEY_CACHE,
): onRequestAsyncHookHandler {
  const authenticate = cachedAuthenticate(accounts, cache);
  return async (request) => {
    const startTask = (request.routeOptions.config as RouteConfig | undefined)?.endpoint === 'start-task';
    const key = apiKeyOf(request);
    if (!key) throw startTask ? errors.missingUser() : errors.missingUserId();
    const digest = keyDigestOf(request);
    const account = digest ? await authenticate(key, digest) : undefined;
    if (!account) throw startTask ? errors.userNotFound() : errors.unauthorized();
    request.caller = { userId: account.userId, email: account.email };
  };
}

export function callerOf(request: FastifyRequest): Caller {
  // Routes using this are registered with requireApiKey; reaching here without a caller is a bug.
  if (!request.caller) throw new Error('route reached without authentication');
  return request.caller;
}
