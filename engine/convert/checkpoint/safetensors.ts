/**
 * Reads .safetensors: an 8-byte little-endian header length, a JSON header mapping names to
 * {dtype, shape, data_offsets}, then the data. Every offset is checked against the file, because a
 * header that lies could otherwise make us read outside the buffer or alias tensors.
 */
import type { StorageDtype } from './pickle.js';
import { CheckpointError, DTYPE_BYTES, decodeElements, type StateDict } from './stateDict.js';

const DTYPES: Record<string, StorageDtype> = {
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
  F64: 'float64',
  I64: 'int64',
  I32: 'int32',
  I16: 'int16',
  I8: 'int8',
  U8: 'uint8',
  BOOL: 'bool',
};

export class SafetensorsError extends CheckpointError {}

/** The JSON header names and shapes tensors; real ones are KBs. Parsing a huge one would cost its size several times over. */
export const MAX_SAFETENSORS_HEADER_BYTES = 100 * 1024 * 1024;

export function readSafetensors(bytes: Uint8Array): StateDict {
  if (bytes.length < 8) throw new SafetensorsError('safetensors file is too short');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = dv.getBigUint64(0, true);
  if (headerLen > BigInt(bytes.length - 8)) {
    throw new SafetensorsError(
      `safetensors header claims ${headerLen} bytes but the file has only ${bytes.length - 8} after the length`,
    );
  }
  if (headerLen > BigInt(MAX_SAFETENSORS_HEADER_BYTES)) {
    throw new SafetensorsError(
      `safetensors header claims ${headerLen} bytes; headers above ${MAX_SAFETENSORS_HEADER_BYTES} bytes are refused`,
    );
  }
  const dataStart = 8 + Number(headerLen);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, dataStart)));
  } catch (e) {
    throw new SafetensorsError(`safetensors header is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new SafetensorsError('safetensors header is not an object');
  const dataLen = bytes.length - dataStart;
  const ranges: Array<[number, number, string]> = [];
  const dict: StateDict = new Map();
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') continue;
    const info = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dtype = typeof info.dtype === 'string' ? DTYPES[info.dtype] : undefined;
    if (!dtype) throw new SafetensorsError(`tensor ${name} has unsupported dtype ${String(info.dtype)}`);
    const shape = info.shape;
    const offs = info.data_offsets;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw new SafetensorsError(`tensor ${name} has an invalid shape`);
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new SafetensorsError(`tensor ${name} has invalid data_offsets`);
    }
    const [begin, end] = offs as [number, number];
    const numel = (shape as number[]).reduce((a, b) => a * b, 1);
    if (end < begin || end > dataLen) {
      throw new SafetensorsError(
        `tensor ${name} data_offsets [${begin}, ${end}] lie outside the ${dataLen}-byte data section`,
      );
    }
    if (end - begin !== numel * DTYPE_BYTES[dtype]) {
      throw new SafetensorsError(
        `tensor ${name} data_offsets span ${end - begin} bytes but shape ${JSON.stringify(shape)} of ${info.dtype} needs ${numel * DTYPE_BYTES[dtype]}`,
      );
    }
    ranges.push([begin, end, name]);
    dict.set(name, {
      shape: [...(shape as number[])],
      data: decodeElements(bytes.subarray(dataStart + begin, dataStart + end), dtype, numel),
    });
  }
  ranges.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i]![0] < ranges[i - 1]![1])
      throw new SafetensorsError(`tensors ${ranges[i - 1]![2]} and ${ranges[i]![2]} overlap`);
  }
  if (dict.size === 0) throw new SafetensorsError('safetensors file holds no tensors');
  return unwrapPrefixes(dict);
}

/** Some exporters flatten {"params": ...} into "params.xxx" keys; strip a single common wrapper prefix. */
function unwrapPrefixes(dict: StateDict): StateDict {
  for (const p of ['params_ema.', 'params.', 'state_dict.', 'module.']) {
    if ([...dict.keys()].every((k) => k.startsWith(p)))
      return new Map([...dict].map(([k, v]) => [k.slice(p.length), v]));
  }
  return dict;
}

/** The `__metadata__` strings of a .safetensors file (licence, author…), or {} when absent or unreadable. */
export function readSafetensorsMetadata(bytes: Uint8Array): Record<string, string> {
  if (bytes.length < 8) return {};
  const len = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true);
  if (len > BigInt(Math.min(bytes.length - 8, MAX_SAFETENSORS_HEADER_BYTES))) return {};
  try {
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + Number(len)))) as Record<string, unknown>;
    const meta = header.__metadata__;
    if (typeof meta !== 'object' || meta === null) return {};
    return Object.fromEntries(Object.entries(meta).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}
