/**
 * Reads the pre-1.6 ("legacy", non-zip) torch.save format: four pickles back to back (magic number,
 * protocol version, sys info, the object), then a pickled list of storage keys, then each storage as
 * an int64 element count followed by its raw bytes, in that list's order.
 */
import { hasErrorCode } from '../../contract/errorCatalog.js';
import { storageFromPid, unpickle, type StorageRef } from './pickle.js';
import { CheckpointError, DTYPE_BYTES, materialize, unwrapTensorRefs, type StateDict } from './stateDict.js';

const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;

export function isLegacyCheckpoint(bytes: Uint8Array): boolean {
  // A legacy file starts with a pickled LONG1 magic number: PROTO 2, LONG1 10 bytes.
  return bytes.length > 4 && bytes[0] === 0x80 && bytes[2] === 0x8a;
}

export function readLegacyCheckpoint(bytes: Uint8Array): StateDict {
  let pos = 0;
  const next = (persistentLoad?: (pid: unknown) => unknown): unknown => {
    let r: ReturnType<typeof unpickle>;
    try {
      r = unpickle(bytes, persistentLoad ? { persistentLoad } : {}, pos);
    } catch (e) {
      // A pickle that does not parse says so as a checkpoint; an unsafe one (its own code) stays as it is.
      if (hasErrorCode(e, 'bad-model-file'))
        throw new CheckpointError(`not a readable PyTorch checkpoint: ${e.message}`);
      throw e;
    }
    pos = r.end;
    return r.value;
  };
  const magic = next();
  if (typeof magic !== 'bigint' || magic !== LEGACY_MAGIC)
    throw new CheckpointError('not a PyTorch checkpoint (bad magic number)');
  next(); // protocol version
  next(); // sys info
  const storages = new Map<string, StorageRef>();
  const obj = next((pid) => {
    // Legacy pids carry a 6th element (view metadata) that modern files dropped; ignore it.
    const s = storageFromPid(Array.isArray(pid) ? pid.slice(0, 5) : pid);
    storages.set(s.key, s);
    return s;
  });
  const keys = next();
  if (!Array.isArray(keys)) throw new CheckpointError('legacy checkpoint has no storage key list');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const data = new Map<string, Uint8Array>();
  for (const k of keys) {
    const s = storages.get(String(k));
    if (!s) throw new CheckpointError(`legacy checkpoint lists an unknown storage ${String(k)}`);
    if (pos + 8 > bytes.length) throw new CheckpointError('legacy checkpoint is truncated');
    const numel = Number(dv.getBigInt64(pos, true));
    pos += 8;
    const len = numel * DTYPE_BYTES[s.dtype];
    if (pos + len > bytes.length) throw new CheckpointError('legacy checkpoint is truncated');
    data.set(s.key, bytes.subarray(pos, pos + len));
    pos += len;
  }
  const dict: StateDict = new Map();
  for (const [name, ref] of unwrapTensorRefs(obj)) {
    const d = data.get(ref.storage.key);
    if (!d) throw new CheckpointError(`checkpoint is missing the storage of ${name}`);
    dict.set(name, materialize(ref, d));
  }
  return dict;
}
