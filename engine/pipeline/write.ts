/**
 * Atomic write: bytes go to a temp file in the destination directory (same filesystem, so rename is atomic)
 * and are renamed into place. A reader never sees a partial file, and on failure nothing is left behind.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

export function tempPathFor(outputPath: string): string {
  return path.join(path.dirname(outputPath), `.${path.basename(outputPath)}.${randomBytes(6).toString('hex')}.tmp`);
}

export async function writeFileAtomic(outputPath: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
  const tmp = tempPathFor(outputPath);
  try {
    const fh = await open(tmp, 'wx');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    signal?.throwIfAborted();
    await rename(tmp, outputPath);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
