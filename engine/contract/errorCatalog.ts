/**
 * The one catalog of Crisp's errors. Every failure anyone can see — an HTTP answer of `crisp serve`, a
 * `crisp: error:` line and its exit code, a desktop item's sentence, a `--json` error — is a row here, found by
 * its stable `code`:
 * - `httpStatus` and `message` are what the server answers (the body is the JSON string of the message). A row
 *   without a status is never an answer of its own: the server answers the endpoint's spec 500 instead, so
 *   nothing but a catalogued refusal reaches a client;
 * - `message` is also the sentence a person reads when nothing more precise was written. `{name}` marks a
 *   part filled in by `crispError(code, { name })`; a caller that knows more (the file, the service, the
 *   server's own words) passes the whole sentence to `new CrispError(code, message, { params })` instead;
 * - an error's `params` are the parts its sentence was made of (`name`: the file or model, `detail`: what is
 *   wrong): they travel with the code across every thread and process (engine/core/errorWire.ts), so the
 *   renderer can say the same in the person's language; nothing parses them back out of the message;
 * - `exitCode` is the CLI's exit status (docs/cli.md): 1 for every failure, 130 for a stop;
 * - `retryable`: trying the same thing again later can succeed without the person changing anything.
 * The renderer's translations are keyed by the same codes (renderer/src/i18n/errorText.ts).
 * This module is plain data and types (no Node), so the renderer may import it.
 */

interface ErrorRow {
  readonly httpStatus: number | null;
  readonly message: string;
  readonly exitCode: number;
  readonly retryable: boolean;
}

/** Exit statuses of the CLI: a failure, or an interrupted (stopped) run. */
const FAILED = 1;
const INTERRUPTED = 130;

/** A row the server answers with: its status and exact body. */
const wire = <M extends string>(httpStatus: number, message: M, retryable = false) =>
  ({ httpStatus, message, exitCode: FAILED, retryable }) as const;
/** A row that is never an HTTP answer of its own. */
const local = <M extends string>(message: M, extra: { retryable?: boolean; exitCode?: number } = {}) =>
  ({ httpStatus: null, message, exitCode: extra.exitCode ?? FAILED, retryable: extra.retryable ?? false }) as const;

export const ERROR_CATALOG = {
  // ---- the contract's answers (spec "Errors" table, and Crisp's extensions in docs/api.md) ----
  /** No X-API-Key (get-upload-url, complete-multipart-upload, get-task-status). */
  'missing-user-id': wire(400, 'Bad Request: Missing User ID'),
  /** No X-API-Key on start-task. */
  'missing-user': wire(400, 'Bad Request: Missing User'),
  /** Unknown key on start-task. */
  'user-not-found': wire(404, 'User not found'),
  /** extension: unknown key on the other endpoints; on a client, any refused or missing key. */
  unauthorized: wire(401, 'Unauthorized'),
  'insufficient-credits': wire(402, 'Insufficient credits'),
  'missing-parameters': wire(400, 'Bad Request: Missing required parameters'),
  /** extension: a specific validation failure, always prefixed like the spec's 400 bodies. */
  'bad-request': wire(400, 'Bad Request: {detail}'),
  /** decision: unknown (or another user's) task id. */
  'task-not-found': wire(404, 'Task not found'),
  /**
   * extension: unknown upload, file, download link or route. On this computer: a file or folder that does not
   * exist (userErrors.ts words that sentence: it names the path and what was being done).
   */
  'not-found': wire(404, 'Not found'),
  /** extension: a presigned URL whose signature does not match, or that has expired. */
  forbidden: wire(403, 'Forbidden: {detail}'),
  /** extension: request body or file above the configured limit. */
  'too-large': wire(413, 'Payload Too Large: {detail}'),
  /** extension: a path segment longer than the router takes. */
  'uri-too-long': wire(414, 'URI Too Long: {detail}'),
  /** extension: request headers larger than the HTTP parser takes. */
  'headers-too-large': wire(431, 'Request Header Fields Too Large: send smaller headers'),
  /** extension: a request (headers or body) that did not arrive in time; the connection is closed. */
  'request-timeout': wire(408, 'Request Timeout: {detail}'),
  /** extension: per-key rate limit or URL-fetch budget (the server adds Retry-After). */
  'rate-limited': wire(429, 'Too Many Requests', true),
  /**
   * extension: the service's object storage did not answer within its deadline, after retries (an outage):
   * nothing was done; the same request can succeed a moment later. The operator's log has the details.
   */
  'storage-unavailable': wire(
    503,
    'Service Unavailable: the storage is not reachable right now; try again shortly',
    true,
  ),
  /** get-upload-url's 500, and the 500 of a route outside the spec (part uploads, downloads, get-account). */
  internal: wire(500, 'Internal Server Error'),
  'upload-failed': wire(500, 'Internal Server Error: Failed to complete upload'),
  'processing-request-failed': wire(500, 'Error processing request'),
  'get-data-failed': wire(500, 'Error getting data'),

  // ---- what a client of a service meets ----
  /** The service answered 5xx (the message is its own words). */
  'server-error': local('The upscaling service had an internal problem. Try again later.', { retryable: true }),
  /** The task ran and failed (PROCESSING_FAILED); the message is the service's reason. */
  'processing-failed': local('The service could not upscale this image.'),
  /** The downloaded or produced output is not the image the service described. */
  'invalid-output': local('The service sent back a result that is not a valid image.'),
  network: local('Cannot reach {service}: the network is unreachable. Check your connection.', { retryable: true }),
  'connection-refused': local(
    'Cannot reach {service}: the connection was refused. Check the URL and that the service is running.',
    { retryable: true },
  ),
  'connection-reset': local('The connection to {service} was cut. Check your network and try again.', {
    retryable: true,
  }),
  'host-not-found': local('Cannot find {service}: the host name does not resolve. Check the URL and your network.', {
    retryable: true,
  }),
  /** A service (or, with a path's own sentence, a disk) that did not answer in time. */
  'timed-out': local('{service} did not answer in time. Check your network and try again.', { retryable: true }),

  // ---- files and folders on this computer ({doing}: "Cannot write the output /path/x.png") ----
  'permission-denied': local(
    '{doing}: permission denied. Choose a folder you can write to, or change its permissions.',
  ),
  'is-a-folder': local('{doing}: it is a folder, not a file.'),
  /** Also: something else already exists under that name. */
  'not-a-folder': local('{doing}: a part of that path is a file, not a folder. Choose another path.'),
  'read-only': local('{doing}: it is on a read-only disk. Choose a folder on a writable disk.'),
  'disk-full': local('{doing}: the disk is full (or your quota is used up). Free some space or choose another disk.'),
  'too-many-open-files': local(
    '{doing}: too many files are open. Close other programs or raise the limit (ulimit -n), then try again.',
  ),
  'name-too-long': local('{doing}: the path is too long. Use a shorter folder or name template.'),
  busy: local('{doing}: it is in use by another program. Close it and try again.'),

  // ---- images and models ----
  'not-an-image': local('{name} is not a JPG, PNG or WEBP image.'),
  /** The file is an image whose bytes are broken: cut short, a corrupted chunk, an unreadable header. */
  'damaged-image': local('{name} is damaged ({detail}): re-export or download it again, then add it anew.'),
  /** The image is readable but cannot be upscaled as asked (too large, damaged, not representable). */
  'unusable-image': local('{name} cannot be upscaled as asked.'),
  /** The output and its temporary raster would not fit the free disk (the disk budget, checked before any work). */
  'not-enough-space': local(
    'Not enough free disk space to upscale {name}. Free some space, choose a smaller scale or JPEG, or write the output to another disk.',
  ),
  'unknown-model': local('Unknown model {name}.'),
  'model-not-installed': local('Model {name} is not installed.'),
  'face-model-missing': local('No face model is installed.'),
  /** A model file that cannot be read, converted, blended, quantized or installed (its message says why). */
  'bad-model-file': local('{name} is not a model file Crisp can use.'),
  /** A model file whose pickle asks to run code outside the allow-list: refused, never executed. */
  'unsafe-model-file': local('{name} asks to run code Crisp does not allow; it was not loaded.'),
  'unsupported-architecture': local('{name} is a network architecture Crisp cannot convert.'),
  'download-failed': local('Could not download {name}.', { retryable: true }),
  'provider-unavailable': local('The execution provider {name} is not available on this computer.'),

  // ---- the engine's own machinery ----
  /** The local engine process died (native crash, GPU fault, out of memory, killed). */
  'engine-crashed': local('The local engine stopped unexpectedly.', { retryable: true }),
  /** The local engine failed an image for a reason no other row names ({detail}: the first line of what it said). */
  'upscale-failed': local('Something went wrong while upscaling {name}: {detail}'),
  /** A database or object-store operation of the service failed (the operator's log has the details). */
  'storage-failed': local('The service could not reach its storage.'),
  /** A queue worker's lease on a task was taken over by another worker. */
  'lease-lost': local('Another worker took over this task.'),
  'account-refused': local('{detail}'),
  /** Another live process owns the data folder a server or worker was given (nothing was changed). */
  'folder-in-use': local(
    'the data folder {name} is in use by {detail}; stop that process first or give this one another {flag} (nothing was changed)',
  ),
  /** The port a server was told to listen on is taken (nothing was changed). */
  'port-in-use': local(
    'port {port} on {host} is already in use by another process; pick another --port (nothing was changed)',
  ),

  // ---- the person and the run ----
  /** Stopped by the person (Stop, Ctrl-C). */
  cancelled: local('Cancelled', { exitCode: INTERRUPTED }),
  /** Stopped because Crisp is closing: the item runs again at the next start. */
  'shutting-down': local('Crisp is shutting down.', { exitCode: INTERRUPTED }),
  /** A command line, option or argument the person gave that cannot work (the message says which). */
  usage: local('{detail}'),
  /** A preset that cannot be used, saved, changed or imported as asked (an unknown or taken name, a built-in…). */
  'preset-refused': local('{detail}'),
  /** A folder that cannot be watched as asked (not a folder, already watched, inside its outputs folder…). */
  'watch-refused': local('{detail}'),
  /** A setting outside what the option declaration accepts (app/settings/upscaleOptions.ts). */
  'invalid-setting': local('Invalid setting {name}: {detail}'),
  /** `crisp ui` without a built renderer. */
  'ui-not-built': local('the UI is not built (no {name}): run "npm run build:renderer" first'),
  /** A call of the app's service its transport refused (an unknown method, arguments of the wrong shape): a bug of the page, not the person's doing. */
  'bad-call': local('{detail}'),
} as const satisfies Record<string, ErrorRow>;

export type ErrorCode = keyof typeof ERROR_CATALOG;
/** The codes the server answers with as they are (their row has an HTTP status). */
export type WireErrorCode = {
  [C in ErrorCode]: (typeof ERROR_CATALOG)[C]['httpStatus'] extends number ? C : never;
}[ErrorCode];
export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CATALOG, value);
}

/** The `{name}` parts of a row's message, as a type: `crispError('bad-request', { detail })`. */
type Slots<S extends string> = S extends `${string}{${infer P}}${infer Rest}` ? P | Slots<Rest> : never;
export type MessageParams<C extends ErrorCode> = Record<Slots<(typeof ERROR_CATALOG)[C]['message']>, string>;

/** A row's message with its `{name}` parts filled in. */
export function catalogMessage<C extends ErrorCode>(code: C, ...params: ParamsArg<C>): string {
  const values: Record<string, string> = params[0] ?? {};
  return ERROR_CATALOG[code].message.replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? `{${k}}`);
}
type ParamsArg<C extends ErrorCode> = [Slots<(typeof ERROR_CATALOG)[C]['message']>] extends [never]
  ? []
  : [MessageParams<C>];

/** The parts an error's sentence was made of, by the row's `{name}` slots (and any the caller adds). */
export type ErrorParams = Readonly<Record<string, string>>;

export interface CrispErrorOptions {
  /** The HTTP status the error arrived with from a service (or is answered with), when not the row's. */
  status?: number;
  /** From Retry-After (rate-limited); undefined when the server did not say. */
  retryAfterMs?: number;
  cause?: unknown;
  /** What the sentence was made of (`name`, `detail`…), for a translation; absent: none. */
  params?: ErrorParams;
}

/**
 * Every error of Crisp that a person or a client may see: a catalog code and the sentence. Tell them apart by
 * `code` (hasErrorCode), never by class: errors cross worker threads and processes, where classes are lost.
 */
export class CrispError extends Error {
  override readonly name: string = 'CrispError';
  readonly retryAfterMs: number | undefined;
  /** What the sentence was made of (`name`, `detail`…): what a translation fills in. */
  readonly params: ErrorParams;
  readonly #status: number | undefined;
  constructor(
    readonly code: ErrorCode,
    message: string,
    options: CrispErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.#status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.params = options.params ?? {};
  }
  /** What is wrong, without the row's wording around it (`bad-request`'s text after "Bad Request: "), if given. */
  get detail(): string | undefined {
    return this.params.detail;
  }
  /** The HTTP status: the one it came with, or the row's; undefined for a failure that is no HTTP answer. */
  get status(): number | undefined {
    return this.#status ?? ERROR_CATALOG[this.code].httpStatus ?? undefined;
  }
  get retryable(): boolean {
    return ERROR_CATALOG[this.code].retryable;
  }
  get exitCode(): number {
    return ERROR_CATALOG[this.code].exitCode;
  }
}

/** A CrispError worded by its row: `crispError('insufficient-credits')`, `crispError('bad-request', { detail })`. */
export function crispError<C extends ErrorCode>(code: C, ...params: ParamsArg<C>): CrispError {
  const values: ErrorParams | undefined = params[0];
  return new CrispError(code, catalogMessage(code, ...params), values ? { params: values } : {});
}

/** An error carrying a catalog code: a CrispError, or one rebuilt from it on the other side of a thread or process. */
export type CodedError = Error & {
  readonly code: ErrorCode;
  readonly status?: number | undefined;
  readonly retryAfterMs?: number | undefined;
  readonly params?: ErrorParams | undefined;
};

/** Any error carrying a catalog code, whatever built it (a rebuilt error from a worker included). */
export function isCrispError(e: unknown): e is CodedError {
  return e instanceof Error && isErrorCode((e as { code?: unknown }).code);
}

/**
 * `e` itself when it is a CrispError built on this side of any thread or process (its class intact), else
 * undefined: for a caller that hands such an error on unchanged. Telling failures apart is by code (hasErrorCode).
 */
export function asCrispError(e: unknown): CrispError | undefined {
  return e instanceof CrispError ? e : undefined;
}

/** Whether `e` carries one of `codes`. */
export function hasErrorCode(e: unknown, ...codes: ErrorCode[]): e is CodedError {
  return isCrispError(e) && codes.includes(e.code);
}

/** Whether trying the same thing again later can succeed without the person changing anything. */
export function isRetryable(e: unknown): e is CodedError {
  return isCrispError(e) && ERROR_CATALOG[e.code].retryable;
}
