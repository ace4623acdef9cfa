/**
 * A client-supplied file name is data, never a path. Plain code (no zod), so the contract's light entry
 * (index.ts) can offer it to callers that load no schema.
 */
const MAX_FILE_NAME_LENGTH = 255;

/** The base name of a client's file name without control characters, or undefined when nothing usable is left. */
export function clientFileName(name: unknown): string | undefined {
  const base = typeof name === 'string' ? (name.split(/[\\/]/).pop() ?? '') : '';
  const clean = base
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, MAX_FILE_NAME_LENGTH);
  return clean === '' || clean === '.' || clean === '..' ? undefined : clean;
}

/** The base name of a client's file name, or `fallback` when nothing usable is left. */
export function sanitizeFileName(name: unknown, fallback = 'image'): string {
  return clientFileName(name) ?? fallback;
}
