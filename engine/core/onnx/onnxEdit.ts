/**
 * Byte-preserving surgery on an existing ONNX model: nodes, initializers and graph fields that an edit does
 * not touch are copied verbatim (attributes keep their exact types, unknown fields survive), so a rewrite
 * (quantization, extra outputs for calibration, pinned input shapes) cannot silently change the rest of the
 * graph. Field numbers are from onnx.proto3.
 */
import { attrProto, type OnnxAttr } from './onnxAttr.js';
import { OnnxParseError } from './onnxReader.js';
import { fieldBytes, fieldString, readFields, ProtoWriter, type ProtoField } from './protobuf.js';

export interface NewNode {
  op: string;
  name: string;
  inputs: string[];
  outputs: string[];
  attrs?: Record<string, OnnxAttr>;
}

export interface NewTensor {
  name: string;
  dims: number[];
  /** onnx TensorProto.DataType (1 float, 2 uint8, 3 int8, 6 int32, 7 int64). */
  dataType: number;
  /** Little-endian raw_data. */
  raw: Uint8Array;
}

/** A graph input or output as the edit declares it: element type and shape (number fixed, string symbolic). */
export interface NewValueInfo {
  name: string;
  /** onnx TensorProto.DataType, as NewTensor's. */
  elemType: number;
  shape: Array<number | string>;
}

/** One entry of the rewritten node list: an original node (by index, optionally re-wired) or a new one. */
export type NodeEntry = { keep: number; inputs?: string[]; outputs?: string[] } | { add: NewNode };

export interface GraphEdit {
  /** The new node list in topological order; default: the original nodes unchanged. */
  nodes?: NodeEntry[];
  dropInitializers?: ReadonlySet<string>;
  addInitializers?: NewTensor[];
  /** Extra graph outputs (e.g. intermediate activations for calibration); type only, shape left unknown. */
  extraOutputs?: Array<{ name: string; elemType: number }>;
  /** Replaces the shape of the first graph input (e.g. a fixed tile size). */
  inputShape?: Array<number | string>;
  /** Replaces the first graph input and the first graph output whole (name, type, shape): new ends for the graph. */
  replaceIo?: { input: NewValueInfo; output: NewValueInfo };
  /** Appended to the model's doc_string so a rewritten file says what was done to it. */
  note?: string;
}

const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const GRAPH_VALUE_INFO = 13;
const MODEL_DOC = 6;
const MODEL_GRAPH = 7;

export function tensorProto(t: NewTensor): ProtoWriter {
  return new ProtoWriter().packedInts(1, t.dims).int(2, t.dataType).string(8, t.name).bytes(9, t.raw);
}

function nodeProto(n: NewNode): ProtoWriter {
  const w = new ProtoWriter();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.name).string(4, n.op);
  for (const [k, v] of Object.entries(n.attrs ?? {})) w.message(5, attrProto(k, v));
  return w;
}

/** An original node with its inputs and/or outputs replaced; every other field is copied as read. */
function rewiredNode(original: Uint8Array, inputs: string[] | undefined, outputs: string[] | undefined): ProtoWriter {
  const fields = readFields(original);
  const w = new ProtoWriter();
  if (inputs) for (const i of inputs) w.string(1, i);
  else for (const f of fields) if (f.field === 1) w.field(f);
  if (outputs) for (const o of outputs) w.string(2, o);
  else for (const f of fields) if (f.field === 2) w.field(f);
  for (const f of fields) if (f.field !== 1 && f.field !== 2) w.field(f);
  return w;
}

function outputValueInfo(name: string, elemType: number): ProtoWriter {
  const tensorType = new ProtoWriter().int(1, elemType);
  return new ProtoWriter().string(1, name).message(2, new ProtoWriter().message(1, tensorType));
}

function valueInfo(v: NewValueInfo): ProtoWriter {
  const shapeW = new ProtoWriter();
  for (const d of v.shape)
    shapeW.message(1, typeof d === 'number' ? new ProtoWriter().int(1, d) : new ProtoWriter().string(2, d));
  const tensorType = new ProtoWriter().int(1, v.elemType).message(2, shapeW);
  return new ProtoWriter().string(1, v.name).message(2, new ProtoWriter().message(1, tensorType));
}

/** ValueInfoProto with its tensor shape replaced (elem type and name kept). */
function reshapedInput(original: Uint8Array, shape: Array<number | string>): ProtoWriter {
  let name = '';
  let elemType = 1;
  for (const f of readFields(original)) {
    if (f.field === 1) name = fieldString(f);
    else if (f.field === 2) {
      for (const tt of readFields(fieldBytes(f))) {
        if (tt.field !== 1) continue;
        for (const te of readFields(fieldBytes(tt))) if (te.field === 1) elemType = Number(te.value);
      }
    }
  }
  return valueInfo({ name, elemType, shape });
}

function initializerName(buf: Uint8Array): string {
  const f = readFields(buf).find((x) => x.field === 8);
  return f ? fieldString(f) : '';
}

/** Returns the edited model's bytes; the input buffer is not modified. */
export function editOnnx(model: Uint8Array, edit: GraphEdit): Uint8Array {
  let top: ProtoField[];
  try {
    top = readFields(model);
  } catch (e) {
    throw new OnnxParseError(`not an ONNX model: ${(e as Error).message}`);
  }
  const graphField = top.find((f) => f.field === MODEL_GRAPH && f.wire === 2);
  if (!graphField) throw new OnnxParseError('not an ONNX model: no graph');
  const graphFields = readFields(fieldBytes(graphField));
  const originalNodes = graphFields.filter((f) => f.field === GRAPH_NODE).map(fieldBytes);

  const graph = new ProtoWriter();
  const entries: NodeEntry[] = edit.nodes ?? originalNodes.map((_, i) => ({ keep: i }));
  for (const e of entries) {
    if ('add' in e) graph.message(GRAPH_NODE, nodeProto(e.add));
    else {
      const original = originalNodes[e.keep];
      if (!original) throw new Error(`editOnnx: no node ${e.keep}`);
      if (e.inputs || e.outputs) graph.message(GRAPH_NODE, rewiredNode(original, e.inputs, e.outputs));
      else graph.bytes(GRAPH_NODE, original);
    }
  }
  let inputSeen = false;
  let outputSeen = false;
  const lastOutput = graphFields.map((f) => f.field).lastIndexOf(GRAPH_OUTPUT);
  for (const [index, f] of graphFields.entries()) {
    if (f.field === GRAPH_NODE) continue;
    if (f.field === GRAPH_INITIALIZER && edit.dropInitializers?.has(initializerName(fieldBytes(f)))) continue;
    // value_info describes intermediate tensors; after a rewrite some may no longer exist, and ORT infers them anyway.
    if (f.field === GRAPH_VALUE_INFO && edit.nodes) continue;
    if (f.field === GRAPH_INPUT && !inputSeen && edit.replaceIo) {
      inputSeen = true;
      graph.message(GRAPH_INPUT, valueInfo(edit.replaceIo.input));
      continue;
    }
    if (f.field === GRAPH_INPUT && !inputSeen && edit.inputShape) {
      inputSeen = true;
      graph.message(GRAPH_INPUT, reshapedInput(fieldBytes(f), edit.inputShape));
      continue;
    }
    if (f.field === GRAPH_INPUT) inputSeen = true;
    if (f.field === GRAPH_OUTPUT && !outputSeen && edit.replaceIo) {
      outputSeen = true;
      graph.message(GRAPH_OUTPUT, valueInfo(edit.replaceIo.output));
    } else graph.field(f);
    if (index === lastOutput) {
      // After the original outputs, so the model's own outputs keep their positions.
      for (const o of edit.extraOutputs ?? []) graph.message(GRAPH_OUTPUT, outputValueInfo(o.name, o.elemType));
    }
  }
  for (const t of edit.addInitializers ?? []) graph.message(GRAPH_INITIALIZER, tensorProto(t));

  const out = new ProtoWriter();
  let docWritten = false;
  for (const f of top) {
    if (f.field === MODEL_GRAPH && f.wire === 2) out.message(MODEL_GRAPH, graph);
    else if (f.field === MODEL_DOC && f.wire === 2 && edit.note) {
      out.string(MODEL_DOC, `${fieldString(f)}\n${edit.note}`.trim());
      docWritten = true;
    } else out.field(f);
  }
  if (edit.note && !docWritten) out.string(MODEL_DOC, edit.note);
  return out.finish();
}
