/**
 * Typed failures of an upscale, whatever the backend. The UI switches on `kind` (or instanceof) to pick a
 * remedy (top up credits, fix the key, wait, retry); `message` is what the person reads: for a contract
 * error it is the server's own message, unchanged. No error built here ever contains the API key.
 */

export type BackendErrorKind =
  | 'InsufficientCredits'
  | 'Unauthorized'
  | 'NotFound'
  | 'RateLimited'
  | 'ServerError'
  | 'Network'
  | 'BadRequest'
  | 'Forbidden'
  | 'PayloadTooLarge'
  | 'ProcessingFailed'
  | 'InvalidOutput'
  | 'WorkerCrashed'
  | 'Cancelled';

export class BackendError extends Error {
  override readonly name: string = 'BackendError';
  constructor(
    readonly kind: BackendErrorKind,
    message: string,
    /** HTTP status when the error came from the server. */
    readonly status?: number,
  ) {
    super(message);
  }
  /** Whether trying the same request again later can succeed without the user changing anything. */
  get retryable(): boolean {
    return (
      this.kind === 'Network' ||
      this.kind === 'RateLimited' ||
      this.kind === 'ServerError' ||
      this.kind === 'WorkerCrashed'
    );
  }
}

export class InsufficientCreditsError extends BackendError {
  override readonly name = 'InsufficientCreditsError';
  constructor(message: string, status = 402) {
    super('InsufficientCredits', message, status);
  }
}
export class UnauthorizedError extends BackendError {
  override readonly name = 'UnauthorizedError';
  constructor(message: string, status = 401) {
    super('Unauthorized', message, status);
  }
}
export class NotFoundError extends BackendError {
  override readonly name = 'NotFoundError';
  constructor(message: string, status = 404) {
    super('NotFound', message, status);
  }
}
export class RateLimitedError extends BackendError {
  override readonly name = 'RateLimitedError';
  constructor(
    message: string,
    /** From Retry-After; undefined when the server did not say. */
    readonly retryAfterMs: number | undefined,
    status = 429,
  ) {
    super('RateLimited', message, status);
  }
}
export class ServerError extends BackendError {
  override readonly name = 'ServerError';
  constructor(message: string, status = 500) {
    super('ServerError', message, status);
  }
}
export class NetworkError extends BackendError {
  override readonly name = 'NetworkError';
  constructor(message: string) {
    super('Network', message);
  }
}
export class BadRequestError extends BackendError {
  override readonly name = 'BadRequestError';
  constructor(message: string, status = 400) {
    super('BadRequest', message, status);
  }
}
export class ForbiddenError extends BackendError {
  override readonly name = 'ForbiddenError';
  constructor(message: string, status = 403) {
    super('Forbidden', message, status);
  }
}
export class PayloadTooLargeError extends BackendError {
  override readonly name = 'PayloadTooLargeError';
  constructor(message: string, status = 413) {
    super('PayloadTooLarge', message, status);
  }
}
/** The task ran and failed (PROCESSING_FAILED); the message is the service's reason. */
export class ProcessingFailedError extends BackendError {
  override readonly name = 'ProcessingFailedError';
  constructor(message: string) {
    super('ProcessingFailed', message);
  }
}
/** The downloaded or produced output is not the image the service described. */
export class InvalidOutputError extends BackendError {
  override readonly name = 'InvalidOutputError';
  constructor(message: string) {
    super('InvalidOutput', message);
  }
}
/** The local engine process died (native crash, GPU fault, out of memory, killed). */
export class WorkerCrashedError extends BackendError {
  override readonly name = 'WorkerCrashedError';
  constructor(message: string) {
    super('WorkerCrashed', message);
  }
}
/** Why a job stopped: the person asked (Stop, Ctrl-C), or Crisp is closing (the item runs again next start). */
export type CancelReason = 'user' | 'shutdown';

export class CancelledError extends BackendError {
  override readonly name = 'CancelledError';
  constructor(readonly reason: CancelReason = 'user') {
    super('Cancelled', reason === 'shutdown' ? 'Crisp is shutting down.' : 'Cancelled');
  }
}

export function isBackendError(e: unknown): e is BackendError {
  return e instanceof BackendError;
}

/** One line for a person: typed errors as they are, anything else reduced to its first line. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message.split('\n')[0] ?? e.name;
  return String(e);
}
