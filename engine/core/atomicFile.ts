/**
 * Atomic writes: data goes to a temp file in the same directory, is flushed, then renamed over the
 * target, so a crash or a full disk never leaves a half-written file under the final name.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';

export function tempPathFor(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
}

export interface AtomicWriteOptions {
  /** Checked after the bytes are on disk, so a cancel between write and rename leaves nothing. */
  signal?: AbortSignal;
  /** File mode of the new file (default 0o644; 0o600 for files holding account state). */
  mode?: number;
}

export async function writeFileAtomic(
  target: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions = {},
): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  const tmp = tempPathFor(target);
  try {
    const fh = await open(tmp, 'wx', opts.mode ?? 0o644);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    opts.signal?.throwIfAborted();
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/** Streams into `target` atomically; `onChunk` sees every chunk (hashing, size caps: throw to abort). */
export async function writeStreamAtomic(
  target: string,
  source: AsyncIterable<Uint8Array> | Uint8Array,
  onChunk?: (chunk: Uint8Array) => void,
): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  const tmp = tempPathFor(target);
  const input = source instanceof Uint8Array ? Readable.from([source]) : Readable.from(source);
  try {
    await pipeline(
      input,
      async function* (chunks: AsyncIterable<Uint8Array>) {
        for await (const chunk of chunks) {
          onChunk?.(chunk);
          yield chunk;
        }
      },
      createWriteStream(tmp, { mode: 0o644 }),
    );
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

export async function writeJsonAtomic(target: string, value: unknown): Promise<void> {
  await writeFileAtomic(target, `${JSON.stringify(value, null, 1)}\n`);
}

export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
