/**
 * X-API-Key authentication, run as the route's first hook (before the body is parsed, so an
 * unauthenticated client cannot make the server buffer a large upload). Answers follow the spec:
 * missing key → the endpoint's 400 ("Bad Request: Missing User" on start-task, "… Missing User ID"
 * elsewhere); unknown key → 404 "User not found" on start-task, 401 "Unauthorized" elsewhere.
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Caller } from '../api.js';
import type { AccountStore } from '../accounts/accountStore.js';
import { errors } from '../contract/index.js';
import type { RouteConfig } from './errorMapping.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on authenticated routes. */
    caller: Caller | null;
  }
}

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const v = request.headers['x-api-key'];
  const key = Array.isArray(v) ? v[0] : v;
  return key && key.trim() !== '' ? key.trim() : undefined;
}

export function requireApiKey(accounts: AccountStore): onRequestAsyncHookHandler {
  return async (request) => {
    const startTask = (request.routeOptions.config as RouteConfig | undefined)?.endpoint === 'start-task';
    const key = apiKeyOf(request);
    if (!key) throw startTask ? errors.missingUser() : errors.missingUserId();
    const account = await accounts.authenticate(key);
    if (!account) throw startTask ? errors.userNotFound() : errors.unauthorized();
    request.caller = { userId: account.userId, email: account.email };
  };
}

export function callerOf(request: FastifyRequest): Caller {
  // Routes using this are registered with requireApiKey; reaching here without a caller is a bug.
  if (!request.caller) throw new Error('route reached without authentication');
  return request.caller;
}
