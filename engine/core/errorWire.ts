/**
 * Errors crossing from a core worker thread to its caller. Structured clone keeps an Error's message but
 * not its class, and callers tell errors apart by their catalog code (CrispError) or by name and errno code
 * (tasks/userMessage.ts), so those are carried explicitly and the error is rebuilt on this side.
 */
import { CrispError, isErrorCode } from '../contract/index.js';

export interface WireError {
  name: string;
  message: string;
  /** A catalog code (CrispError), or an errno code (ENOSPC, EACCES…). */
  code?: string;
  /** The HTTP status a CrispError carries, when it has one. */
  status?: number;
}

export function toWire(e: unknown): WireError {
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    const status = e instanceof CrispError ? e.status : undefined;
    return {
      name: e.name,
      message: e.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(status !== undefined ? { status } : {}),
    };
  }
  return { name: 'Error', message: String(e) };
}

export function fromWire(w: WireError): Error {
  const e: Error & { code?: string } = isErrorCode(w.code)
    ? new CrispError(w.code, w.message, w.status !== undefined ? { status: w.status } : {})
    : new Error(w.message);
  // Keep the name: the app's error mapping and logs read it (ImageInputError, FaceModelMissingError…).
  Object.defineProperty(e, 'name', { value: w.name, enumerable: false, configurable: true, writable: true });
  if (w.code !== undefined && !isErrorCode(w.code)) e.code = w.code;
  return e;
}
