/**
 * Reads a PyTorch zip checkpoint (torch.save since 1.6): `<prefix>/data.pkl` holds the pickled
 * object, `<prefix>/data/<key>` the raw storages. The pickle is parsed by pickle.ts, never executed.
 *
 * A zip is a promise about sizes that only inflating can check, so nothing is inflated blindly (a
 * 1.5 MB zip bomb used to inflate 3.3 GB before it was refused):
 * 1. only the central directory is read first (names and declared sizes);
 * 2. `data.pkl` is inflated alone, under its own cap, and parsed;
 * 3. only the storages the pickle references are inflated, after checking that their declared sizes
 *    add up to no more than `maxRatio` × the file's size (torch.save stores entries uncompressed, so a
 *    real checkpoint inflates to about its own size) and `maxBytes` in all, and that each storage is
 *    the size its tensors need;
 * 4. while inflating, yauzl's entry-size validation stops a stream the moment it yields more than its
 *    declared size, so a zip that lies about its sizes is cut there too.
 */
import yauzl from 'yauzl';
import { isCrispError } from '../../contract/errorCatalog.js';
import { storageFromPid, unpickle, type StorageRef } from './pickle.js';
import { CheckpointError, DTYPE_BYTES, materialize, unwrapTensorRefs, type StateDict } from './stateDict.js';

export interface ZipCheckpointLimits {
  /** Inflated bytes allowed per byte of the zip file. */
  maxRatio: number;
  /** Inflated bytes allowed in all, whatever the file's size. */
  maxBytes: number;
  /** Largest data.pkl (the pickle of a state dict is small: names, shapes, strides). */
  maxPickleBytes: number;
  /** Most entries in the central directory. */
  maxEntries: number;
}

export const DEFAULT_ZIP_CHECKPOINT_LIMITS: ZipCheckpointLimits = {
  maxRatio: 4,
  maxBytes: 2 * 1024 * 1024 * 1024,
  maxPickleBytes: 64 * 1024 * 1024,
  maxEntries: 100_000,
};

const MiB = 1024 * 1024;
const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

export function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

async function openZip(bytes: Uint8Array): Promise<yauzl.ZipFile> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true, validateEntrySizes: true, autoClose: false }, (err, z) =>
      err ? reject(err) : resolve(z),
    );
  });
}

async function inflate(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  const stream = await zip.openReadStreamPromise(entry);
  const out = Buffer.allocUnsafe(entry.uncompressedSize);
  let at = 0;
  for await (const c of stream as AsyncIterable<Buffer>) {
    // yauzl already errors past the declared size; this keeps the copy in bounds regardless.
    if (at + c.length > out.length)
      throw new CheckpointError(`${entry.fileName} inflates beyond its declared ${entry.uncompressedSize} bytes`);
    c.copy(out, at);
    at += c.length;
  }
  if (at !== out.length)
    throw new CheckpointError(`${entry.fileName} inflates to ${at} bytes, not its declared ${entry.uncompressedSize}`);
  return out;
}

/** Parses a torch zip checkpoint into float32 tensors. Errors are CheckpointError / UnsafePickleError. */
export async function readZipCheckpoint(
  bytes: Uint8Array,
  limits: ZipCheckpointLimits = DEFAULT_ZIP_CHECKPOINT_LIMITS,
): Promise<StateDict> {
  const cap = Math.min(limits.maxBytes, Math.max(MiB, bytes.length * limits.maxRatio));
  let zip: yauzl.ZipFile;
  const entries = new Map<string, yauzl.Entry>();
  try {
    zip = await openZip(bytes);
    for await (const entry of zip.eachEntry()) {
      if (entries.size >= limits.maxEntries)
        throw new CheckpointError(`the zip has more than ${limits.maxEntries} entries: not a PyTorch checkpoint`);
      if (!entry.fileName.endsWith('/')) entries.set(entry.fileName, entry);
    }
  } catch (e) {
    // Our own refusals (any catalog code) pass as they are; the zip library's errors become a sentence.
    if (isCrispError(e)) throw e;
    throw new CheckpointError(
      `not a readable PyTorch zip checkpoint (the file may be truncated): ${(e as Error).message}`,
    );
  }
  try {
    const pklName = [...entries.keys()].find((n) => n === 'data.pkl' || n.endsWith('/data.pkl'));
    if (!pklName) throw new CheckpointError('zip file has no data.pkl: not a PyTorch checkpoint');
    const pklEntry = entries.get(pklName)!;
    if (pklEntry.uncompressedSize > Math.min(limits.maxPickleBytes, cap)) {
      throw new CheckpointError(
        `data.pkl declares ${mib(pklEntry.uncompressedSize)} uncompressed; a checkpoint of ${mib(bytes.length)} cannot need more than ${mib(Math.min(limits.maxPickleBytes, cap))}: refusing a likely zip bomb`,
      );
    }
    const prefix = pklName.slice(0, pklName.length - 'data.pkl'.length);
    const storages = new Map<string, StorageRef>();
    const { value } = unpickle(await readEntry(zip, pklEntry), {
      persistentLoad: (pid) => {
        const s = storageFromPid(pid);
        storages.set(s.key, s);
        return s;
      },
    });
    const refs = unwrapTensorRefs(value);

    // Every referenced storage is sized from the central directory before any of them is inflated.
    const needed = new Map<string, yauzl.Entry>();
    let total = pklEntry.uncompressedSize;
    for (const [name, ref] of refs) {
      const key = ref.storage.key;
      if (needed.has(key)) continue;
      const entry = entries.get(`${prefix}data/${key}`);
      if (!entry) throw new CheckpointError(`checkpoint is missing the storage of ${name}`);
      const expected = ref.storage.numel * DTYPE_BYTES[ref.storage.dtype];
      if (entry.uncompressedSize !== expected) {
        throw new CheckpointError(
          `the storage of ${name} declares ${entry.uncompressedSize} bytes but its ${ref.storage.numel} ${ref.storage.dtype} elements take ${expected}`,
        );
      }
      total += entry.uncompressedSize;
      if (total > cap) {
        throw new CheckpointError(
          `the checkpoint's tensors declare more than ${mib(cap)} uncompressed from a ${mib(bytes.length)} file (limit: ${limits.maxRatio}× the file, ${mib(limits.maxBytes)} at most): refusing a likely zip bomb`,
        );
      }
      needed.set(key, entry);
    }
    const data = new Map<string, Buffer>();
    for (const [key, entry] of needed) data.set(key, await readEntry(zip, entry));
    const dict: StateDict = new Map();
    for (const [name, ref] of refs) dict.set(name, materialize(ref, data.get(ref.storage.key)!));
    return dict;
  } finally {
    zip.close();
  }
}

async function readEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  try {
    return await inflate(zip, entry);
  } catch (e) {
    if (isCrispError(e)) throw e;
    throw new CheckpointError(
      `${entry.fileName} cannot be read from the zip (the file may be truncated or corrupt): ${(e as Error).message}`,
    );
  }
}
