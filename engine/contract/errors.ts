/**
 * The error catalog: every status code and message body the contract can answer with.
 * The spec's Errors table is reproduced exactly; Crisp's extensions (401, 404 task, 429, validation
 * details) are documented in docs/api.md. Error bodies on the wire are JSON strings of `message`.
 */

export type Endpoint = 'get-upload-url' | 'complete-multipart-upload' | 'start-task' | 'get-task-status';

export type ErrorCode =
  | 'MISSING_USER_ID'
  | 'MISSING_USER'
  | 'USER_NOT_FOUND'
  | 'UNAUTHORIZED'
  | 'INSUFFICIENT_CREDITS'
  | 'MISSING_PARAMETERS'
  | 'BAD_REQUEST'
  | 'TASK_NOT_FOUND'
  | 'NOT_FOUND'
  | 'FORBIDDEN'
  | 'PAYLOAD_TOO_LARGE'
  | 'URI_TOO_LONG'
  | 'HEADERS_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'RATE_LIMITED'
  | 'INTERNAL'
  | 'UPLOAD_FAILED'
  | 'PROCESSING_REQUEST_FAILED'
  | 'GET_DATA_FAILED';

export class ContractError extends Error {
  override readonly name = 'ContractError';
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function isContractError(e: unknown): e is ContractError {
  return e instanceof ContractError;
}

/** The spec's Errors table, row for row (used by the server and its tests). */
export const SPEC_ERRORS = [
  { endpoint: 'get-upload-url', status: 400, code: 'MISSING_USER_ID', message: 'Bad Request: Missing User ID' },
  { endpoint: 'get-upload-url', status: 402, code: 'INSUFFICIENT_CREDITS', message: 'Insufficient credits' },
  { endpoint: 'get-upload-url', status: 500, code: 'INTERNAL', message: 'Internal Server Error' },
  {
    endpoint: 'complete-multipart-upload',
    status: 400,
    code: 'MISSING_PARAMETERS',
    message: 'Bad Request: Missing required parameters',
  },
  {
    endpoint: 'complete-multipart-upload',
    status: 500,
    code: 'UPLOAD_FAILED',
    message: 'Internal Server Error: Failed to complete upload',
  },
  { endpoint: 'start-task', status: 400, code: 'MISSING_USER', message: 'Bad Request: Missing User' },
  { endpoint: 'start-task', status: 402, code: 'INSUFFICIENT_CREDITS', message: 'Insufficient credits' },
  { endpoint: 'start-task', status: 404, code: 'USER_NOT_FOUND', message: 'User not found' },
  { endpoint: 'start-task', status: 500, code: 'PROCESSING_REQUEST_FAILED', message: 'Error processing request' },
  { endpoint: 'get-task-status', status: 400, code: 'MISSING_USER_ID', message: 'Bad Request: Missing User ID' },
  { endpoint: 'get-task-status', status: 500, code: 'GET_DATA_FAILED', message: 'Error getting data' },
] as const satisfies ReadonlyArray<{ endpoint: Endpoint; status: number; code: ErrorCode; message: string }>;

/** The 500 answer of each endpoint (spec wording). */
export const SERVER_FAILURE: Readonly<Record<Endpoint, ContractErrorFactory>> = {
  'get-upload-url': () => new ContractError('INTERNAL', 500, 'Internal Server Error'),
  'complete-multipart-upload': () =>
    new ContractError('UPLOAD_FAILED', 500, 'Internal Server Error: Failed to complete upload'),
  'start-task': () => new ContractError('PROCESSING_REQUEST_FAILED', 500, 'Error processing request'),
  'get-task-status': () => new ContractError('GET_DATA_FAILED', 500, 'Error getting data'),
};

type ContractErrorFactory = () => ContractError;

export const errors = {
  /** No X-API-Key (get-upload-url, complete-multipart-upload, get-task-status). */
  missingUserId: () => new ContractError('MISSING_USER_ID', 400, 'Bad Request: Missing User ID'),
  /** No X-API-Key on start-task. */
  missingUser: () => new ContractError('MISSING_USER', 400, 'Bad Request: Missing User'),
  /** Unknown key on start-task. */
  userNotFound: () => new ContractError('USER_NOT_FOUND', 404, 'User not found'),
  /** extension: unknown key on the other endpoints. */
  unauthorized: () => new ContractError('UNAUTHORIZED', 401, 'Unauthorized'),
  insufficientCredits: () => new ContractError('INSUFFICIENT_CREDITS', 402, 'Insufficient credits'),
  missingParameters: () => new ContractError('MISSING_PARAMETERS', 400, 'Bad Request: Missing required parameters'),
  /** extension: a specific validation failure, always prefixed like the spec's 400 bodies. */
  badRequest: (detail: string) => new ContractError('BAD_REQUEST', 400, `Bad Request: ${detail}`),
  /** decision: unknown (or another user's) task id. */
  taskNotFound: () => new ContractError('TASK_NOT_FOUND', 404, 'Task not found'),
  /** extension: unknown (or another user's) upload, file or download link. */
  notFound: (what = 'Not found') => new ContractError('NOT_FOUND', 404, what),
  /** extension: a presigned URL whose signature does not match, or that has expired. */
  forbidden: (detail: string) => new ContractError('FORBIDDEN', 403, `Forbidden: ${detail}`),
  /** extension: request body or file above the configured limit. */
  payloadTooLarge: (detail: string) => new ContractError('PAYLOAD_TOO_LARGE', 413, `Payload Too Large: ${detail}`),
  /** extension: a path segment longer than the router takes. */
  uriTooLong: (detail: string) => new ContractError('URI_TOO_LONG', 414, `URI Too Long: ${detail}`),
  /** extension: request headers larger than the HTTP parser takes. */
  headersTooLarge: () =>
    new ContractError('HEADERS_TOO_LARGE', 431, 'Request Header Fields Too Large: send smaller headers'),
  /** extension: a request (headers or body) that did not arrive in time; the connection is closed. */
  requestTimeout: (detail: string) => new ContractError('REQUEST_TIMEOUT', 408, `Request Timeout: ${detail}`),
  /** extension: per-key rate limit (the server adds Retry-After). */
  rateLimited: () => new ContractError('RATE_LIMITED', 429, 'Too Many Requests'),
  /** extension: enhanceFace on a server started without --face-model (nothing is charged). */
  faceNotAvailable: () =>
    new ContractError('BAD_REQUEST', 400, 'Bad Request: face enhancement is not available on this server'),
  serverFailure: (endpoint: Endpoint) => SERVER_FAILURE[endpoint](),
  /** extension: a failure on a route outside the spec (part uploads, downloads, get-account). */
  internal: () => new ContractError('INTERNAL', 500, 'Internal Server Error'),
} as const;
