/**
 * The converter's common currency: a state dict of float32 tensors, whatever file it came from.
 * Also the dtype decoding shared by the pickle, safetensors and ncnn readers, and the unwrapping of
 * the containers training frameworks put around the weights (params / params_ema / state_dict).
 */
import { isTensorRef, type StorageDtype, type TensorRef } from './pickle.js';
import { CrispError } from '../../contract/errorCatalog.js';

export interface Tensor {
  shape: number[];
  data: Float32Array;
}

export type StateDict = Map<string, Tensor>;

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class CheckpointError extends CrispError {
  override readonly name = 'CheckpointError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

export const DTYPE_BYTES: Record<StorageDtype, number> = {
  float32: 4,
  float16: 2,
  bfloat16: 2,
  float64: 8,
  int64: 8,
  int32: 4,
  int16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
};

export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

/** Decodes `count` little-endian elements of `dtype` starting at element `start` into float32. */
export function decodeElements(bytes: Uint8Array, dtype: StorageDtype, count: number, start = 0): Float32Array {
  const size = DTYPE_BYTES[dtype];
  if ((start + count) * size > bytes.length)
    throw new CheckpointError(`tensor data is shorter than its shape says (${dtype})`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + start * size, count * size);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const o = i * size;
    switch (dtype) {
      case 'float32':
        out[i] = dv.getFloat32(o, true);
        break;
      case 'float16':
        out[i] = halfToFloat(dv.getUint16(o, true));
        break;
      case 'bfloat16':
        out[i] = new Float32Array(new Uint32Array([dv.getUint16(o, true) << 16]).buffer)[0]!;
        break;
      case 'float64':
        out[i] = dv.getFloat64(o, true);
        break;
      case 'int64':
        out[i] = Number(dv.getBigInt64(o, true));
        break;
      case 'int32':
        out[i] = dv.getInt32(o, true);
        break;
      case 'int16':
        out[i] = dv.getInt16(o, true);
        break;
      case 'int8':
        out[i] = dv.getInt8(o);
        break;
      case 'uint8':
      case 'bool':
        out[i] = dv.getUint8(o);
        break;
    }
  }
  return out;
}

/** No upscaling or face model has a tensor near this many elements (the largest hold a few million). */
export const MAX_TENSOR_ELEMENTS = 2 ** 28;

/** Builds a contiguous float32 tensor from a torch (storage, offset, size, stride) view. */
export function materialize(ref: TensorRef, storage: Uint8Array): Tensor {
  const { size, stride, offset } = ref;
  const count = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  if (!count(offset) || !size.every(count) || stride.length !== size.length || !stride.every(count))
    throw new CheckpointError(`a tensor has an invalid shape (${size.join('×')}): the file is damaged`);
  const numel = size.reduce((a, b) => a * b, 1);
  const shape = `${size.join('×')} (${numel} elements)`;
  // Checked before anything is allocated: a declared shape is only a claim (a 1e12-element one made the
  // typed array itself throw "Invalid typed array length").
  if (numel > MAX_TENSOR_ELEMENTS)
    throw new CheckpointError(
      `a tensor declares shape ${shape}; no model has a tensor above ${MAX_TENSOR_ELEMENTS} elements, so the file is damaged or not a model`,
    );
  const stored = storage.length / DTYPE_BYTES[ref.storage.dtype];
  const last = size.reduce((at, n, d) => at + (n - 1) * stride[d]!, offset);
  if (numel > 0 && last >= stored)
    throw new CheckpointError(
      `a tensor declares shape ${shape} but its storage holds ${Math.floor(stored)}: the file is damaged`,
    );
  const all = decodeElements(storage, ref.storage.dtype, stored);
  const data = new Float32Array(numel);
  // Generic strided gather: checkpoints are usually contiguous, but torch.save keeps views as views.
  const idx = new Array<number>(size.length).fill(0);
  for (let i = 0; i < numel; i++) {
    let src = offset;
    for (let d = 0; d < size.length; d++) src += idx[d]! * stride[d]!;
    if (src >= all.length) throw new CheckpointError('tensor view runs past its storage');
    data[i] = all[src]!;
    for (let d = size.length - 1; d >= 0; d--) {
      if (++idx[d]! < size[d]!) break;
      idx[d] = 0;
    }
  }
  return { shape: [...size], data };
}

const WRAPPER_KEYS = ['params_ema', 'params', 'state_dict', 'model', 'net', 'generator'];

/**
 * Finds the weights inside whatever a training script saved. params_ema wins over params, as
 * BasicSR / Real-ESRGAN inference does, because the EMA weights are the ones the authors evaluate.
 * A DataParallel "module." prefix is stripped.
 */
export function unwrapStateDict<T>(root: unknown, isTensor: (v: unknown) => v is T): Map<string, T> {
  let cur: unknown = root;
  for (let depth = 0; depth < 3; depth++) {
    if (!(cur instanceof Map)) break;
    const hasTensor = [...cur.values()].some((v) => isTensor(v));
    if (hasTensor) break;
    const key = WRAPPER_KEYS.find((k) => cur instanceof Map && cur.get(k) instanceof Map);
    if (!key) break;
    cur = cur.get(key);
  }
  if (!(cur instanceof Map)) throw new CheckpointError('checkpoint does not contain a state dict');
  const out = new Map<string, T>();
  for (const [k, v] of cur) {
    if (typeof k !== 'string' || !isTensor(v)) continue;
    out.set(k.startsWith('module.') ? k.slice(7) : k, v);
  }
  if (out.size === 0) throw new CheckpointError('checkpoint holds no tensors');
  return out;
}

export function unwrapTensorRefs(root: unknown): Map<string, TensorRef> {
  return unwrapStateDict(root, isTensorRef);
}
