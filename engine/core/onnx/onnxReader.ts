/**
 * Reads the parts of an ONNX ModelProto the converter needs: nodes, initializers (with the byte
 * offset of their raw data, so denoiseBlend can patch weights without re-serialising the graph),
 * graph inputs/outputs and the opset. Field numbers are from onnx.proto3, which is stable.
 */
import {
  fieldBytes,
  fieldFloat,
  fieldInt,
  fieldString,
  readFields,
  repeatedInts,
  type ProtoField,
} from './protobuf.js';
import { CrispError } from '../../contract/errorCatalog.js';

export const ONNX_FLOAT = 1;
export const ONNX_INT64 = 7;

export interface OnnxTensorInfo {
  name: string;
  dims: number[];
  dataType: number;
  /** Raw little-endian bytes (either raw_data or float_data re-encoded). */
  data: Uint8Array;
  /** Absolute offset of raw_data inside the model buffer, or null when the tensor uses float_data. */
  rawOffset: number | null;
}

export type OnnxAttrValue = number | string | number[] | OnnxTensorInfo;

export interface OnnxNodeInfo {
  name: string;
  opType: string;
  inputs: string[];
  outputs: string[];
  attrs: Record<string, OnnxAttrValue>;
}

export interface OnnxValueInfo {
  name: string;
  elemType: number;
  /** number for a fixed size, string for a symbolic (dynamic) one, null when unspecified. */
  shape: Array<number | string | null>;
}

export interface OnnxModelInfo {
  irVersion: number;
  opset: number;
  producer: string;
  /** ModelProto.doc_string ('' when absent); Crisp's converters put the detected spec there as JSON. */
  doc: string;
  nodes: OnnxNodeInfo[];
  initializers: OnnxTensorInfo[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
}

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class OnnxParseError extends CrispError {
  override readonly name = 'OnnxParseError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

function absOffset(base: Uint8Array, sub: Uint8Array): number {
  return sub.byteOffset - base.byteOffset;
}

function readTensor(buf: Uint8Array, root: Uint8Array): OnnxTensorInfo {
  const fields = readFields(buf);
  let name = '';
  let dataType = 0;
  let raw: Uint8Array | null = null;
  const floats: number[] = [];
  for (const f of fields) {
    if (f.field === 8) name = fieldString(f);
    else if (f.field === 2) dataType = fieldInt(f);
    else if (f.field === 9) raw = fieldBytes(f);
    else if (f.field === 4) {
      if (f.value instanceof Uint8Array) {
        const v = f.value;
        const dv = new DataView(v.buffer, v.byteOffset, v.byteLength);
        for (let i = 0; i + 4 <= v.length; i += 4) floats.push(dv.getFloat32(i, true));
      } else floats.push(fieldFloat(f));
    }
  }
  const dims = repeatedInts(fields, 1);
  if (raw) return { name, dims, dataType, data: raw, rawOffset: absOffset(root, raw) };
  if (dataType === ONNX_INT64) {
    const ints = repeatedInts(fields, 7);
    const out = new BigInt64Array(ints.map((x) => BigInt(x)));
    return { name, dims, dataType, data: new Uint8Array(out.buffer), rawOffset: null };
  }
  return { name, dims, dataType, data: new Uint8Array(new Float32Array(floats).buffer), rawOffset: null };
}

function readAttr(buf: Uint8Array, root: Uint8Array): [string, OnnxAttrValue] {
  const fields = readFields(buf);
  let name = '';
  let type = 0;
  let f: number | null = null;
  let i: number | null = null;
  let s: string | null = null;
  let t: OnnxTensorInfo | null = null;
  const floats: number[] = [];
  for (const x of fields) {
    if (x.field === 1) name = fieldString(x);
    else if (x.field === 20) type = fieldInt(x);
    else if (x.field === 2) f = fieldFloat(x);
    else if (x.field === 3) i = fieldInt(x);
    else if (x.field === 4) s = fieldString(x);
    else if (x.field === 5) t = readTensor(fieldBytes(x), root);
    else if (x.field === 7 && x.wire === 5) floats.push(fieldFloat(x));
  }
  const ints = repeatedInts(fields, 8);
  switch (type) {
    case 1:
      return [name, f ?? 0];
    case 2:
      return [name, i ?? 0];
    case 3:
      return [name, s ?? ''];
    case 4:
      if (!t) throw new OnnxParseError(`attribute ${name} has no tensor`);
      return [name, t];
    case 6:
      return [name, floats];
    case 7:
      return [name, ints];
    default:
      return [name, i ?? f ?? s ?? ints];
  }
}

function readValueInfo(buf: Uint8Array): OnnxValueInfo {
  const fields = readFields(buf);
  let name = '';
  let elemType = 0;
  const shape: Array<number | string | null> = [];
  for (const f of fields) {
    if (f.field === 1) name = fieldString(f);
    else if (f.field === 2) {
      for (const tt of readFields(fieldBytes(f))) {
        if (tt.field !== 1) continue;
        for (const te of readFields(fieldBytes(tt))) {
          if (te.field === 1) elemType = fieldInt(te);
          else if (te.field === 2) {
            for (const d of readFields(fieldBytes(te))) {
              if (d.field !== 1) continue;
              const dimFields = readFields(fieldBytes(d));
              const v = dimFields.find((x) => x.field === 1);
              const p = dimFields.find((x) => x.field === 2);
              shape.push(v ? fieldInt(v) : p ? fieldString(p) : null);
            }
          }
        }
      }
    }
  }
  return { name, elemType, shape };
}

function readNode(buf: Uint8Array, root: Uint8Array): OnnxNodeInfo {
  const node: OnnxNodeInfo = { name: '', opType: '', inputs: [], outputs: [], attrs: {} };
  for (const f of readFields(buf)) {
    if (f.field === 1) node.inputs.push(fieldString(f));
    else if (f.field === 2) node.outputs.push(fieldString(f));
    else if (f.field === 3) node.name = fieldString(f);
    else if (f.field === 4) node.opType = fieldString(f);
    else if (f.field === 5) {
      const [k, v] = readAttr(fieldBytes(f), root);
      node.attrs[k] = v;
    }
  }
  return node;
}

/** Parses an ONNX model. Throws OnnxParseError when the bytes are not a ModelProto with a graph. */
export function readOnnx(model: Uint8Array): OnnxModelInfo {
  let top: ProtoField[];
  try {
    top = readFields(model);
  } catch (e) {
    throw new OnnxParseError(`not an ONNX model: ${(e as Error).message}`);
  }
  const info: OnnxModelInfo = {
    irVersion: 0,
    opset: 0,
    producer: '',
    doc: '',
    nodes: [],
    initializers: [],
    inputs: [],
    outputs: [],
  };
  let graph: Uint8Array | null = null;
  for (const f of top) {
    if (f.field === 1 && f.wire === 0) info.irVersion = fieldInt(f);
    else if (f.field === 2 && f.wire === 2) info.producer = fieldString(f);
    else if (f.field === 6 && f.wire === 2) info.doc = fieldString(f);
    else if (f.field === 7 && f.wire === 2) graph = fieldBytes(f);
    else if (f.field === 8 && f.wire === 2) {
      const op = readFields(fieldBytes(f));
      const domain = op.find((x) => x.field === 1);
      const version = op.find((x) => x.field === 2);
      if ((!domain || fieldString(domain) === '' || fieldString(domain) === 'ai.onnx') && version)
        info.opset = fieldInt(version);
    }
  }
  if (!graph) throw new OnnxParseError('not an ONNX model: no graph');
  for (const f of readFields(graph)) {
    if (f.wire !== 2) continue;
    if (f.field === 1) info.nodes.push(readNode(fieldBytes(f), model));
    else if (f.field === 5) info.initializers.push(readTensor(fieldBytes(f), model));
    else if (f.field === 11) info.inputs.push(readValueInfo(fieldBytes(f)));
    else if (f.field === 12) info.outputs.push(readValueInfo(fieldBytes(f)));
  }
  return info;
}

/** The float32 values of a FLOAT initializer (copied, so the caller may keep it). */
export function tensorFloats(t: OnnxTensorInfo): Float32Array {
  if (t.dataType !== ONNX_FLOAT) throw new OnnxParseError(`tensor ${t.name} is not float32 (type ${t.dataType})`);
  const copy = new Uint8Array(t.data);
  return new Float32Array(copy.buffer, 0, copy.length / 4);
}
