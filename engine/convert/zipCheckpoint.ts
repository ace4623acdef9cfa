/**
 * Reads a PyTorch zip checkpoint (torch.save since 1.6): `<prefix>/data.pkl` holds the pickled
 * object, `<prefix>/data/<key>` the raw storages. The pickle is parsed by pickle.ts, never executed.
 */
import yauzl from 'yauzl';
import { storageFromPid, unpickle, type StorageRef } from './pickle.js';
import { CheckpointError, materialize, unwrapTensorRefs, type StateDict } from './stateDict.js';

export function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

async function readAllEntries(bytes: Uint8Array): Promise<Map<string, Buffer>> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true, validateEntrySizes: true }, (err, z) => (err ? reject(err) : resolve(z)));
  });
  const out = new Map<string, Buffer>();
  try {
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName.endsWith('/')) continue;
      const stream = await zip.openReadStreamPromise(entry);
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(c as Buffer);
      out.set(entry.fileName, Buffer.concat(chunks));
    }
  } finally {
    zip.close();
  }
  return out;
}

/** Parses a torch zip checkpoint into float32 tensors. Errors are CheckpointError / UnsafePickleError. */
export async function readZipCheckpoint(bytes: Uint8Array): Promise<StateDict> {
  let entries: Map<string, Buffer>;
  try {
    entries = await readAllEntries(bytes);
  } catch (e) {
    throw new CheckpointError(`not a readable PyTorch zip checkpoint (the file may be truncated): ${(e as Error).message}`);
  }
  const pklName = [...entries.keys()].find((n) => n === 'data.pkl' || n.endsWith('/data.pkl'));
  if (!pklName) throw new CheckpointError('zip file has no data.pkl: not a PyTorch checkpoint');
  const prefix = pklName.slice(0, pklName.length - 'data.pkl'.length);
  const storages = new Map<string, StorageRef>();
  const { value } = unpickle(entries.get(pklName)!, {
    persistentLoad: (pid) => {
      const s = storageFromPid(pid);
      storages.set(s.key, s);
      return s;
    },
  });
  const refs = unwrapTensorRefs(value);
  const dict: StateDict = new Map();
  for (const [name, ref] of refs) {
    const data = entries.get(`${prefix}data/${ref.storage.key}`);
    if (!data) throw new CheckpointError(`checkpoint is missing the storage of ${name}`);
    dict.set(name, materialize(ref, data));
  }
  return dict;
}
