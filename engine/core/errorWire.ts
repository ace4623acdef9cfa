/**
 * Errors crossing from a core worker thread to its caller. Structured clone keeps an Error's message but
 * not its class, and callers tell errors apart by class (ContractError) or by name and errno code
 * (tasks/userMessage.ts), so those are carried explicitly and the error is rebuilt on this side.
 */
import { ContractError, type ErrorCode } from '../contract/index.js';

export interface WireError {
  name: string;
  message: string;
  /** errno code (ENOSPC, EACCES…), or the contract's error code for a ContractError. */
  code?: string;
  /** ContractError only. */
  status?: number;
}

export function toWire(e: unknown): WireError {
  if (e instanceof ContractError) return { name: e.name, message: e.message, code: e.code, status: e.status };
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { name: 'Error', message: String(e) };
}

export function fromWire(w: WireError): Error {
  if (w.name === 'ContractError' && w.status !== undefined && w.code !== undefined)
    return new ContractError(w.code as ErrorCode, w.status, w.message);
  const e: Error & { code?: string } = new Error(w.message);
  // Keep the name: userMessage() and the app's error mapping read it (ImageInputError, FaceModelMissingError…).
  Object.defineProperty(e, 'name', { value: w.name, enumerable: false, configurable: true, writable: true });
  if (w.code !== undefined) e.code = w.code;
  return e;
}
