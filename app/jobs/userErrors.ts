/**
 * The one place where errors become sentences for a person: filesystem and network error codes (ENOENT,
 * EACCES, ECONNREFUSED, …) and our typed backend errors map to what happened, to which file or service,
 * and what to do — with a stable `code` for `--json` and the UI. Raw Node messages (internal temp paths,
 * `ENOENT: no such file…`) never reach the person; the original error is kept as `cause` for --verbose.
 */
import { BackendError, type BackendErrorKind } from '../backends/errors.js';

export const ERROR_CODES = [
  'not-found',
  'permission-denied',
  'is-a-folder',
  'not-a-folder',
  'read-only',
  'disk-full',
  'too-many-open-files',
  'name-too-long',
  'busy',
  'timed-out',
  'connection-refused',
  'connection-reset',
  'host-not-found',
  'network',
  'not-an-image',
  'unknown-model',
  'bad-request',
  'insufficient-credits',
  'unauthorized',
  'forbidden',
  'rate-limited',
  'too-large',
  'server-error',
  'processing-failed',
  'invalid-output',
  'engine-crashed',
  'cancelled',
  'usage',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** An error already written for the person: `message` is the sentence, `code` the stable name. */
export class UserError extends Error {
  override readonly name = 'UserError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** What the person was doing when it failed: the sentence names it and the path or service involved. */
export interface ErrorContext {
  /** The user's path (never an internal temp path). */
  path?: string;
  /** e.g. 'create the output folder', 'read', 'write the output'. */
  action?: string;
  /** A service base URL, for network errors. */
  service?: string;
}

const BACKEND_CODES: Record<BackendErrorKind, ErrorCode> = {
  InsufficientCredits: 'insufficient-credits',
  Unauthorized: 'unauthorized',
  NotFound: 'not-found',
  RateLimited: 'rate-limited',
  ServerError: 'server-error',
  Network: 'network',
  BadRequest: 'bad-request',
  Forbidden: 'forbidden',
  PayloadTooLarge: 'too-large',
  ProcessingFailed: 'processing-failed',
  InvalidOutput: 'invalid-output',
  WorkerCrashed: 'engine-crashed',
  Cancelled: 'cancelled',
};

function errnoOf(e: unknown): string | undefined {
  let cur: unknown = e;
  // undici wraps the socket error: TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }).
  for (let depth = 0; depth < 4 && cur && typeof cur === 'object'; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z0-9_]+|UND_ERR_[A-Z_]+)$/.test(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

function ioSentence(errno: string, ctx: ErrorContext): { code: ErrorCode; message: string } | undefined {
  const p = ctx.path ? `${ctx.path}` : 'the file';
  const doing = ctx.action ? `Cannot ${ctx.action} ${p}` : `Cannot use ${p}`;
  const svc = ctx.service ?? 'the service';
  switch (errno) {
    case 'ENOENT':
      return {
        code: 'not-found',
        message: `${doing}: it (or a folder above it) does not exist, and it cannot be created there. Check the path.`,
      };
    case 'EACCES':
    case 'EPERM':
      return {
        code: 'permission-denied',
        message: `${doing}: permission denied. Choose a folder you can write to, or change its permissions.`,
      };
    case 'EISDIR':
      return { code: 'is-a-folder', message: `${doing}: it is a folder, not a file.` };
    case 'ENOTDIR':
      return {
        code: 'not-a-folder',
        message: `${doing}: a part of that path is a file, not a folder. Choose another path.`,
      };
    case 'EROFS':
      return { code: 'read-only', message: `${doing}: it is on a read-only disk. Choose a folder on a writable disk.` };
    case 'ENOSPC':
    case 'EDQUOT':
      return {
        code: 'disk-full',
        message: `${doing}: the disk is full (or your quota is used up). Free some space or choose another disk.`,
      };
    case 'EMFILE':
    case 'ENFILE':
      return {
        code: 'too-many-open-files',
        message: `${doing}: too many files are open. Close other programs or raise the limit (ulimit -n), then try again.`,
      };
    case 'ENAMETOOLONG':
      return {
        code: 'name-too-long',
        message: `${doing}: the path is too long. Use a shorter folder or name template.`,
      };
    case 'EBUSY':
    case 'ETXTBSY':
      return { code: 'busy', message: `${doing}: it is in use by another program. Close it and try again.` };
    case 'EEXIST':
      return { code: 'not-a-folder', message: `${doing}: something else already exists under that name.` };
    case 'ELOOP':
      return { code: 'not-found', message: `${doing}: the path contains a symbolic link loop.` };
    case 'ECONNREFUSED':
      return {
        code: 'connection-refused',
        message: `Cannot reach ${svc}: the connection was refused. Check the URL and that the service is running.`,
      };
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return {
        code: 'connection-reset',
        message: `The connection to ${svc} was cut. Check your network and try again.`,
      };
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return ctx.service || !ctx.path
        ? { code: 'timed-out', message: `${svc} did not answer in time. Check your network and try again.` }
        : { code: 'timed-out', message: `${doing}: the system did not answer in time. Choose another location.` };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return {
        code: 'host-not-found',
        message: `Cannot find ${svc}: the host name does not resolve. Check the URL and your network.`,
      };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENETDOWN':
      return { code: 'network', message: `Cannot reach ${svc}: the network is unreachable. Check your connection.` };
    default:
      return undefined;
  }
}

/** The sentence and code for any error; `ctx` names what was being done and to which path or service. */
export function toUserError(e: unknown, ctx: ErrorContext = {}): UserError {
  if (e instanceof UserError) return e;
  if (e instanceof BackendError) {
    // Already a sentence for the person; a socket error behind it still gives the precise code.
    const behind = errnoOf(e.cause);
    const code = (behind ? ioSentence(behind, ctx)?.code : undefined) ?? BACKEND_CODES[e.kind];
    return new UserError(code, firstLine(e.message), { cause: e });
  }
  const errno = errnoOf(e);
  const io = errno ? ioSentence(errno, ctx) : undefined;
  if (io) return new UserError(io.code, io.message, { cause: e });
  const where = ctx.path ? `${ctx.path}: ` : '';
  // Unknown errors keep their first line only: never a stack trace (--verbose shows the cause).
  return new UserError(
    'internal',
    `${where}${firstLine(e instanceof Error ? e.message : String(e)) || 'something went wrong'}`,
    { cause: e },
  );
}

/**
 * The stable code of an error, for a transport to send beside the message (the UI words well-known codes in
 * the person's language, app/ui/bridgeServer.ts and electron/main/serviceIpc.ts); undefined when unclassified.
 */
export function errorCodeOf(e: unknown): ErrorCode | undefined {
  const code = toUserError(e).code;
  return code === 'internal' ? undefined : code;
}

function firstLine(s: string): string {
  return (s.split('\n')[0] ?? '').trim();
}

/** Races a step against the cancel signal and, where the OS can hang (NFS, /proc), a timeout. */
export function guardStep<T>(
  step: Promise<T>,
  opts: { signal?: AbortSignal | undefined; timeoutMs?: number; what: string },
): Promise<T> {
  const { signal, timeoutMs, what } = opts;
  if (signal?.aborted)
    return Promise.reject(signal.reason instanceof Error ? signal.reason : new UserError('cancelled', 'Cancelled'));
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      cleanup();
      reject(signal?.reason instanceof Error ? signal.reason : new UserError('cancelled', 'Cancelled'));
    };
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        cleanup();
        reject(
          new UserError(
            'timed-out',
            `${what} did not finish within ${Math.round(timeoutMs / 1000)} s; the system may be unresponsive there. Choose another location.`,
          ),
        );
      }, timeoutMs);
      timer.unref();
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    step.then(
      (v) => {
        cleanup();
        resolve(v);
      },
      (e: unknown) => {
        cleanup();
        reject(e);
      },
    );
  });
}
