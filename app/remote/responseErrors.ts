/**
 * HTTP answers and transport failures → catalogued CrispErrors (engine/contract/errorCatalog.ts). Error bodies
 * are JSON strings (spec: "plain JSON text messages"); the parsed string is the message, unchanged. The spec's
 * own 400/404 rows that mean "no or unknown key" (Missing User, Missing User ID, User not found) become
 * `unauthorized` so the UI asks for a key instead of showing a bad request.
 */
import {
  asCrispError,
  CrispError,
  crispError,
  type ErrorCode,
  errors,
  SPEC_ERRORS,
} from '../../engine/contract/index.js';
import { ioError } from '../jobs/userErrors.js';

const AUTH_MESSAGES = new Set<string>([
  ...SPEC_ERRORS.filter(
    (e) => e.code === 'missing-user' || e.code === 'missing-user-id' || e.code === 'user-not-found',
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

/** What an HTTP error status means to a client, by its catalog row. */
function codeOfStatus(status: number, message: string): ErrorCode {
  if (status === 402) return 'insufficient-credits';
  if (status === 401 || ((status === 400 || status === 404) && AUTH_MESSAGES.has(message))) return 'unauthorized';
  if (status === 429) return 'rate-limited';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not-found';
  if (status === 413) return 'too-large';
  if (status >= 500) return 'server-error';
  return 'bad-request';
}

export function errorFromResponse(
  status: number,
  bodyText: string,
  headers: Record<string, string | string[] | undefined>,
): CrispError {
  const message = messageOfBody(bodyText, status);
  const code = codeOfStatus(status, message);
  const retryAfter = code === 'rate-limited' ? retryAfterMs(headers['retry-after']) : undefined;
  return new CrispError(code, message, { status, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}) });
}

/** undici and socket failures → their network row (or cancelled when our own signal aborted the request). */
export function errorFromTransport(e: unknown, origin: string, signal?: AbortSignal): CrispError {
  const own = asCrispError(e);
  if (own) return own;
  if (signal?.aborted) return crispError('cancelled');
  // Socket error codes become the same sentences as everywhere else (app/jobs/userErrors.ts); the cause is
  // kept for --verbose.
  const io = ioError(e, { service: `the upscaling service at ${origin}` });
  if (io) return io;
  const detail = e instanceof Error ? e.message.split('\n')[0] : String(e);
  return new CrispError('network', `Could not reach the upscaling service at ${origin} (${detail}).`, { cause: e });
}
