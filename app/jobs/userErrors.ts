/**
 * The one place where errors become sentences for a person: filesystem and network error codes (ENOENT,
 * EACCES, ECONNREFUSED, …) become the catalog's rows (engine/contract/errorCatalog.ts), worded with what
 * happened, to which file or service, and what to do; catalogued errors keep their code and sentence. The code
 * is stable, for `--json`, the UI and the CLI's exit status. Raw Node messages (internal temp paths,
 * `ENOENT: no such file…`) never reach the person; the original error is kept as `cause` for --verbose.
 */
import {
  asCrispError,
  catalogMessage,
  CrispError,
  crispError,
  isCrispError,
  type ErrorCode,
} from '../../engine/contract/index.js';

export { ERROR_CODES, type ErrorCode } from '../../engine/contract/index.js';

/** What the person was doing when it failed: the sentence names it and the path or service involved. */
export interface ErrorContext {
  /** The user's path (never an internal temp path). */
  path?: string;
  /** e.g. 'create the output folder', 'read', 'write the output'. */
  action?: string;
  /** A service base URL, for network errors. */
  service?: string;
}

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
  const service = ctx.service ?? 'the service';
  const file = (code: FileCode) => ({ code, message: catalogMessage(code, { doing }) });
  const net = (code: NetworkCode) => ({ code, message: catalogMessage(code, { service }) });
  switch (errno) {
    case 'ENOENT':
      // The catalog's not-found row is the service's 404; a missing path gets its own sentence.
      return {
        code: 'not-found',
        message: `${doing}: it (or a folder above it) does not exist, and it cannot be created there. Check the path.`,
      };
    case 'EACCES':
    case 'EPERM':
      return file('permission-denied');
    case 'EISDIR':
      return file('is-a-folder');
    case 'ENOTDIR':
      return file('not-a-folder');
    case 'EROFS':
      return file('read-only');
    case 'ENOSPC':
    case 'EDQUOT':
      return file('disk-full');
    case 'EMFILE':
    case 'ENFILE':
      return file('too-many-open-files');
    case 'ENAMETOOLONG':
      return file('name-too-long');
    case 'EBUSY':
    case 'ETXTBSY':
      return file('busy');
    case 'EEXIST':
      return { code: 'not-a-folder', message: `${doing}: something else already exists under that name.` };
    case 'ELOOP':
      return { code: 'not-found', message: `${doing}: the path contains a symbolic link loop.` };
    case 'ECONNREFUSED':
      return net('connection-refused');
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return net('connection-reset');
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return ctx.service || !ctx.path
        ? net('timed-out')
        : { code: 'timed-out', message: `${doing}: the system did not answer in time. Choose another location.` };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return net('host-not-found');
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENETDOWN':
      return net('network');
    default:
      return undefined;
  }
}
type FileCode =
  | 'permission-denied'
  | 'is-a-folder'
  | 'not-a-folder'
  | 'read-only'
  | 'disk-full'
  | 'too-many-open-files'
  | 'name-too-long'
  | 'busy';
type NetworkCode = 'connection-refused' | 'connection-reset' | 'timed-out' | 'host-not-found' | 'network';

/** The code of a socket or file-system failure behind `e`, worded for `ctx`; undefined when there is none. */
export function ioError(e: unknown, ctx: ErrorContext = {}): CrispError | undefined {
  const errno = errnoOf(e);
  const io = errno ? ioSentence(errno, ctx) : undefined;
  return io ? new CrispError(io.code, io.message, { cause: e }) : undefined;
}

/** The sentence and code for any error; `ctx` names what was being done and to which path or service. */
export function toUserError(e: unknown, ctx: ErrorContext = {}): CrispError {
  const own = asCrispError(e);
  if (own && own.message === firstLine(own.message)) return own;
  if (isCrispError(e)) {
    // Already a sentence for the person (its first line); a socket error behind it still gives the precise code.
    const behind = errnoOf(e.cause);
    const code = (behind ? ioSentence(behind, ctx)?.code : undefined) ?? e.code;
    return new CrispError(code, firstLine(e.message), {
      cause: e,
      ...(e.status !== undefined ? { status: e.status } : {}),
      ...(e.params ? { params: e.params } : {}),
    });
  }
  const io = ioError(e, ctx);
  if (io) return io;
  const where = ctx.path ? `${ctx.path}: ` : '';
  // Unknown errors keep their first line only: never a stack trace (--verbose shows the cause).
  return new CrispError(
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
  if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : crispError('cancelled'));
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      cleanup();
      reject(signal?.reason instanceof Error ? signal.reason : crispError('cancelled'));
    };
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        cleanup();
        reject(
          new CrispError(
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
