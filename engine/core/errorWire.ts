/**
 * The one error wire: how a failure crosses a boundary — from a core worker thread to its pool
 * (protocol.ts), from the local engine process to the app (app/worker/protocol.ts). Structured clone and
 * JSON keep an Error's message but not its class, and callers tell errors apart by their catalog code
 * (CrispError), or by errno code (engine/service/tasks/userMessage.ts, app/jobs/userErrors.ts), so the code, the status and
 * the parts the sentence was made of (`params`: the file, the model, the detail) are carried explicitly and
 * the error is rebuilt on the other side. The code core raised is the code `--json`, the HTTP answer and the
 * renderer see; nothing on the way derives a code from a status or parses one out of a message.
 */
import { CrispError, isCrispError, isErrorCode, type ErrorParams } from '../contract/index.js';

export interface WireError {
  name: string;
  message: string;
  /** A catalog code (CrispError), or an errno code (ENOSPC, EACCES…). */
  code?: string;
  /** The HTTP status a CrispError carries, when it has one. */
  status?: number;
  /** A CrispError's params (`name`, `detail`…): what a translation of its sentence fills in. */
  params?: ErrorParams;
}

export function toWire(e: unknown): WireError {
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    const status = isCrispError(e) ? e.status : undefined;
    const params = isCrispError(e) && e.params && Object.keys(e.params).length > 0 ? { ...e.params } : undefined;
    return {
      name: e.name,
      message: e.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(status !== undefined ? { status } : {}),
      ...(params ? { params } : {}),
    };
  }
  return { name: 'Error', message: String(e) };
}

export function fromWire(w: WireError): Error {
  const e: Error & { code?: string } = isErrorCode(w.code)
    ? new CrispError(w.code, w.message, {
        ...(w.status !== undefined ? { status: w.status } : {}),
        ...(w.params ? { params: w.params } : {}),
      })
    : new Error(w.message);
  // Keep the name: the app's error mapping and logs read it (ImageInputError, FaceModelMissingError…).
  Object.defineProperty(e, 'name', { value: w.name, enumerable: false, configurable: true, writable: true });
  if (w.code !== undefined && !isErrorCode(w.code)) e.code = w.code;
  return e;
}
