/**
 * The contract's view of the error catalog (errorCatalog.ts): the spec's Errors table by endpoint, each
 * endpoint's 500 answer, and named shorthands for the refusals the engine and the server raise. Statuses and
 * messages are never written here: they are the catalog's rows. Error bodies on the wire are JSON strings of
 * `message`; Crisp's extensions (401, 404 task, 429, validation details) are documented in docs/api.md.
 */
import {
  catalogMessage,
  CrispError,
  crispError,
  ERROR_CATALOG,
  hasErrorCode,
  isCrispError,
  type WireErrorCode,
} from './errorCatalog.js';

export type Endpoint = 'get-upload-url' | 'complete-multipart-upload' | 'start-task' | 'get-task-status';

/** A catalogued error the server may answer with as it is: its row has an HTTP status. */
export type ContractError = CrispError & { readonly status: number };

export function isContractError(e: unknown): e is ContractError {
  return isCrispError(e) && ERROR_CATALOG[e.code].httpStatus !== null;
}

/** The spec's Errors table: which catalog rows each endpoint answers with (used by the server and its tests). */
const SPEC_ROWS: ReadonlyArray<readonly [Endpoint, WireErrorCode]> = [
  ['get-upload-url', 'missing-user-id'],
  ['get-upload-url', 'insufficient-credits'],
  ['get-upload-url', 'internal'],
  ['complete-multipart-upload', 'missing-parameters'],
  ['complete-multipart-upload', 'upload-failed'],
  ['start-task', 'missing-user'],
  ['start-task', 'insufficient-credits'],
  ['start-task', 'user-not-found'],
  ['start-task', 'processing-request-failed'],
  ['get-task-status', 'missing-user-id'],
  ['get-task-status', 'get-data-failed'],
];

export const SPEC_ERRORS = SPEC_ROWS.map(([endpoint, code]) => ({
  endpoint,
  code,
  status: ERROR_CATALOG[code].httpStatus,
  message: ERROR_CATALOG[code].message,
}));

/** The 500 answer of each endpoint (spec wording). */
const SERVER_FAILURE: Readonly<Record<Endpoint, WireErrorCode>> = {
  'get-upload-url': 'internal',
  'complete-multipart-upload': 'upload-failed',
  'start-task': 'processing-request-failed',
  'get-task-status': 'get-data-failed',
};

const fixed = (code: WireErrorCode) => () => new CrispError(code, ERROR_CATALOG[code].message) as ContractError;

export const errors = {
  missingUserId: fixed('missing-user-id'),
  missingUser: fixed('missing-user'),
  userNotFound: fixed('user-not-found'),
  unauthorized: fixed('unauthorized'),
  insufficientCredits: fixed('insufficient-credits'),
  missingParameters: fixed('missing-parameters'),
  badRequest: (detail: string) => crispError('bad-request', { detail }) as ContractError,
  /**
   * The 400 a server answers for a refusal worded for a person (an unusable image, a model not installed…):
   * its sentence is the detail and the refusal itself the cause, so a caller that is no server reports the
   * refusal's own code (refusalBehind).
   */
  refused: (refusal: CrispError) =>
    new CrispError('bad-request', catalogMessage('bad-request', { detail: refusal.message }), {
      params: { detail: refusal.message },
      cause: refusal,
    }) as ContractError,
  taskNotFound: fixed('task-not-found'),
  notFound: (what: string = catalogMessage('not-found')) => new CrispError('not-found', what) as ContractError,
  forbidden: (detail: string) => crispError('forbidden', { detail }) as ContractError,
  payloadTooLarge: (detail: string) => crispError('too-large', { detail }) as ContractError,
  uriTooLong: (detail: string) => crispError('uri-too-long', { detail }) as ContractError,
  headersTooLarge: fixed('headers-too-large'),
  requestTimeout: (detail: string) => crispError('request-timeout', { detail }) as ContractError,
  rateLimited: fixed('rate-limited'),
  /** extension: enhanceFace on a server started without --face-model (nothing is charged). */
  faceNotAvailable: () =>
    crispError('bad-request', { detail: 'face enhancement is not available on this server' }) as ContractError,
  serverFailure: (endpoint: Endpoint) => fixed(SERVER_FAILURE[endpoint])(),
  /** extension: a failure on a route outside the spec (part uploads, downloads, get-account). */
  internal: fixed('internal'),
} as const;

/** The person's refusal a server's 400 was made of (errors.refused); any other error as it is. */
export function refusalBehind(e: unknown): unknown {
  return hasErrorCode(e, 'bad-request') && isCrispError(e.cause) ? e.cause : e;
}
