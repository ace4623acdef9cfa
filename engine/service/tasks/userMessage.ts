/**
 * Turns any failure into one line a user can act on. Errors we raise ourselves already carry such a
 * message; anything else (a native crash message, an I/O error) is reduced to its first line and named
 * after the file it happened to — never a stack trace.
 */
import { CrispError, hasErrorCode, isContractError } from '../../contract/index.js';

/** Failures whose message is already a sentence for the person who sent the image (catalog codes). */
const KNOWN_USER_ERRORS = new Set<string>([
  'unusable-image',
  'damaged-image',
  'not-enough-space',
  'model-not-installed',
]);

export function userMessage(e: unknown, fileName?: string): string {
  // A refusal's own words, without the row's "Bad Request: " around them.
  if (isContractError(e)) return (hasErrorCode(e, 'bad-request') ? e.params?.detail : undefined) ?? e.message;
  if (e instanceof Error && KNOWN_USER_ERRORS.has(String((e as { code?: unknown }).code))) return e.message;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const where = fileName ? ` while upscaling ${fileName}` : '';
  if (code === 'ENOSPC') return `The disk is full${where}; free some space and try again.`;
  if (code === 'EACCES' || code === 'EPERM') return `Permission denied${where}; check the folder's permissions.`;
  const first = (e instanceof Error ? e.message : String(e)).split('\n')[0]?.trim() ?? 'unknown error';
  return `Something went wrong${where}: ${first.slice(0, 300)}`;
}

/** Absolute file-system paths (two or more segments) that are not part of a URL. */
const ABSOLUTE_PATH = /(?<![\w:/.])(?:[A-Za-z]:)?[\\/](?:[^\s'"`\\/]+[\\/])+[^\s'"`,;)]*/g;

/**
 * userMessage for the API users of a server: the same sentence without what only the operator should
 * see — no file-system path and no server command. A model missing on the server is named as such; the
 * full message (install command, models folder) goes to `operatorLog`.
 */
export function publicMessage(e: unknown, fileName: string | undefined, operatorLog: (detail: string) => void): string {
  if (hasErrorCode(e, 'model-not-installed')) {
    operatorLog(e.message);
    const model = (e as Error & { model?: string }).model;
    return `model '${model ?? 'unknown'}' is not installed on this server`;
  }
  const message = userMessage(e, fileName);
  const cleaned = message.replace(ABSOLUTE_PATH, '(a server path)');
  if (cleaned !== message) operatorLog(message);
  return cleaned;
}

/** A refusal for an API user: the same error without absolute paths (the full message goes to `operatorLog`). */
export function publicError(e: CrispError, operatorLog: (detail: string) => void): CrispError {
  const cleaned = e.message.replace(ABSOLUTE_PATH, '(a server path)');
  if (cleaned === e.message) return e;
  operatorLog(e.message);
  return new CrispError(e.code, cleaned, { status: e.status });
}
