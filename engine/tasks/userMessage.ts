/**
 * Turns any failure into one line a user can act on. Errors we raise ourselves already carry such a
 * message; anything else (a native crash message, an I/O error) is reduced to its first line and named
 * after the file it happened to — never a stack trace.
 */
import { isContractError } from '../contract/index.js';

const KNOWN_USER_ERRORS = new Set(['ImageInputError', 'ModelNotInstalledError', 'ContractError', 'FetchImageError']);

export function userMessage(e: unknown, fileName?: string): string {
  if (isContractError(e)) return e.message.replace(/^Bad Request: /, '');
  if (e instanceof Error && KNOWN_USER_ERRORS.has(e.name)) return e.message;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const where = fileName ? ` while upscaling ${fileName}` : '';
  if (code === 'ENOSPC') return `The disk is full${where}; free some space and try again.`;
  if (code === 'EACCES' || code === 'EPERM') return `Permission denied${where}; check the folder's permissions.`;
  const first = (e instanceof Error ? e.message : String(e)).split('\n')[0]?.trim() ?? 'unknown error';
  return `Something went wrong${where}: ${first.slice(0, 300)}`;
}
