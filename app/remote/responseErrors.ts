/**
 * HTTP answers and transport failures → typed BackendErrors. Error bodies are JSON strings (spec:
 * "plain JSON text messages"); the parsed string is the message, unchanged. The spec's own 400/404 rows
 * that mean "no or unknown key" (Missing User, Missing User ID, User not found) become Unauthorized so the
 * UI asks for a key instead of showing a bad request.
 */
import { errors, SPEC_ERRORS } from '../../engine/contract/index.js';
import { toUserError } from '../jobs/userErrors.js';
import {
  BackendError,
  BadRequestError,
  CancelledError,
  ForbiddenError,
  InsufficientCreditsError,
  NetworkError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
} from '../backends/errors.js';

const AUTH_MESSAGES = new Set<string>([
  ...SPEC_ERRORS.filter(
    (e) => e.code === 'MISSING_USER' || e.code === 'MISSING_USER_ID' || e.code === 'USER_NOT_FOUND',
  ).map((e) => e.message),
  errors.unauthorized().message,
]);

const MAX_MESSAGE = 500;

export function messageOfBody(text: string, status: number): string {
  let message: string | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'string') message = parsed;
    else if (parsed && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string') {
      message = (parsed as { message: string }).message;
    }
  } catch {
    message = text.trim() || undefined;
  }
  const m = (message ?? `HTTP ${status}`).replace(/\s+/g, ' ').trim();
  return m.length > MAX_MESSAGE ? `${m.slice(0, MAX_MESSAGE - 1)}…` : m;
}

/**
 * A proxy or load balancer in front of the service answers an HTML error page (502/504): the person gets its
 * title, not markup. Undefined when the text is not HTML.
 */
export function htmlSummary(text: string, contentType: string | string[] | undefined): string | undefined {
  const ct = Array.isArray(contentType) ? contentType[0] : contentType;
  if (!/text\/html/i.test(ct ?? '') && !/^\s*<(!doctype|html)/i.test(text)) return undefined;
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1] ?? /<h1[^>]*>([^<]*)<\/h1>/i.exec(text)?.[1] ?? '';
  return title.replace(/\s+/g, ' ').trim().slice(0, 120);
}

/** Retry-After is either delta-seconds or an HTTP date. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v) return undefined;
  const secs = Number(v);
  if (Number.isFinite(secs) && secs >= 0) return Math.round(secs * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function errorFromResponse(
  status: number,
  bodyText: string,
  headers: Record<string, string | string[] | undefined>,
): BackendError {
  const message = messageOfBody(bodyText, status);
  if (status === 402) return new InsufficientCreditsError(message, status);
  if (status === 401 || ((status === 400 || status === 404) && AUTH_MESSAGES.has(message)))
    return new UnauthorizedError(message, status);
  if (status === 429) return new RateLimitedError(message, retryAfterMs(headers['retry-after']), status);
  if (status === 403) return new ForbiddenError(message, status);
  if (status === 404) return new NotFoundError(message, status);
  if (status === 413) return new PayloadTooLargeError(message, status);
  if (status >= 500) return new ServerError(message, status);
  return new BadRequestError(message, status);
}

/** undici and socket failures → Network (or Cancelled when our own signal aborted the request). */
export function errorFromTransport(e: unknown, origin: string, signal?: AbortSignal): BackendError {
  if (e instanceof BackendError) return e;
  if (signal?.aborted) return new CancelledError();
  // Socket error codes become the same sentences as everywhere else (app/jobs/userErrors.ts); the cause is
  // kept so the stable code (connection-refused, timed-out, …) reaches --json and the UI.
  const u = toUserError(e, { service: `the upscaling service at ${origin}` });
  const detail = e instanceof Error ? e.message.split('\n')[0] : String(e);
  const message = u.code !== 'internal' ? u.message : `Could not reach the upscaling service at ${origin} (${detail}).`;
  return Object.assign(new NetworkError(message), { cause: e });
}
