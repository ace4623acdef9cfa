/**
 * Builds ONNX models by hand (ModelProto → GraphProto → NodeProto/TensorProto/ValueInfoProto),
 * using the small, stable field numbers from onnx.proto3. Weights are stored as raw_data so the
 * file is compact and denoiseBlend can patch them in place.
 */
import { attr, attrProto, type OnnxAttr } from '../../core/onnx/onnxAttr.js';
import { ProtoWriter } from '../../core/onnx/protobuf.js';

// The converters write attributes through this module too.
export { attr, type OnnxAttr };

export const OPSET = 17;
const IR_VERSION = 8;

interface NodeSpec {
  op: string;
  name: string;
  inputs: string[];
  outputs: string[];
  attrs: Record<string, OnnxAttr>;
}

interface InitSpec {
  name: string;
  dims: number[];
  dataType: number;
  raw: Uint8Array;
}

function valueInfo(name: string, shape: Array<number | string>, elemType = 1): ProtoWriter {
  const shapeW = new ProtoWriter();
  for (const d of shape) {
    const dim = new ProtoWriter();
    if (typeof d === 'number') dim.int(1, d);
    else dim.string(2, d);
    shapeW.message(1, dim);
  }
  const tensorType = new ProtoWriter().int(1, elemType).message(2, shapeW);
  return new ProtoWriter().string(1, name).message(2, new ProtoWriter().message(1, tensorType));
}

/** Accumulates nodes and initializers; names are generated so callers only wire values. */
export class GraphBuilder {
  private nodes: NodeSpec[] = [];
  private inits: InitSpec[] = [];
  private counter = 0;

  constructor(readonly graphName: string) {}

  /**
   * A name no other value of this graph has. Counted per graph, so converting the same weights twice (a .pth
   * and its .safetensors) writes the same bytes.
   */
  freshName(prefix: string): string {
    return `${prefix}_${this.counter++}`;
  }

  /** Adds a float32 initializer (copied) and returns its name. */
  weight(name: string, dims: number[], data: Float32Array): string {
    const numel = dims.reduce((a, b) => a * b, 1);
    if (numel !== data.length)
      throw new Error(`initializer ${name}: ${data.length} values for shape [${dims.join(',')}]`);
    const raw = new Uint8Array(data.length * 4);
    new Float32Array(raw.buffer).set(data);
    this.inits.push({ name, dims, dataType: 1, raw });
    return name;
  }

  int64s(name: string, values: number[]): string {
    const raw = new Uint8Array(new BigInt64Array(values.map((v) => BigInt(v))).buffer);
    this.inits.push({ name, dims: [values.length], dataType: 7, raw });
    return name;
  }

  /** Adds a node and returns its (first) output name. */
  node(op: string, inputs: string[], attrs: Record<string, OnnxAttr> = {}, output?: string): string {
    const name = `${op}_${this.counter++}`;
    const out = output ?? `${name}_out`;
    this.nodes.push({ op, name, inputs, outputs: [out], attrs });
    return out;
  }

  /** Adds a node with `count` outputs (TopK's values and indices) and returns their names. */
  nodeOutputs(op: string, inputs: string[], count: number, attrs: Record<string, OnnxAttr> = {}): string[] {
    const name = `${op}_${this.counter++}`;
    const outputs = Array.from({ length: count }, (_, i) => `${name}_out${i}`);
    this.nodes.push({ op, name, inputs, outputs, attrs });
    return outputs;
  }

  conv(
    x: string,
    w: string,
    b: string | null,
    kernel: [number, number],
    pads: [number, number, number, number],
    opts: { strides?: [number, number]; dilations?: [number, number]; group?: number } = {},
    output?: string,
  ): string {
    const attrs: Record<string, OnnxAttr> = { kernel_shape: attr.ints(kernel), pads: attr.ints(pads) };
    if (opts.strides) attrs.strides = attr.ints(opts.strides);
    if (opts.dilations) attrs.dilations = attr.ints(opts.dilations);
    if (opts.group && opts.group !== 1) attrs.group = attr.int(opts.group);
    return this.node('Conv', b ? [x, w, b] : [x, w], attrs, output);
  }

  /** Nearest upsampling that matches torch F.interpolate(mode='nearest'): asymmetric + floor. */
  resizeNearest(x: string, scaleH: number, scaleW: number, output?: string): string {
    const scales = this.weight(`scales_${this.counter++}`, [4], new Float32Array([1, 1, scaleH, scaleW]));
    return this.node(
      'Resize',
      [x, '', scales],
      {
        mode: attr.string('nearest'),
        coordinate_transformation_mode: attr.string('asymmetric'),
        nearest_mode: attr.string('floor'),
      },
      output,
    );
  }

  /** Serialises the model with `input` [batch,3,height,width] → `output` (all dims dynamic). */
  toBytes(
    opts: {
      input?: string;
      output?: string;
      inChannels?: number;
      outChannels?: number;
      /** The output's ONNX element type (TensorProto.DataType); default 1, float32. */
      outputType?: number;
      producer?: string;
      doc?: string;
    } = {},
  ): Uint8Array {
    const graph = new ProtoWriter();
    for (const n of this.nodes) {
      const nw = new ProtoWriter();
      for (const i of n.inputs) nw.string(1, i);
      for (const o of n.outputs) nw.string(2, o);
      nw.string(3, n.name).string(4, n.op);
      for (const [k, v] of Object.entries(n.attrs)) nw.message(5, attrProto(k, v));
      graph.message(1, nw);
    }
    graph.string(2, this.graphName);
    for (const t of this.inits) {
      const tw = new ProtoWriter().packedInts(1, t.dims).int(2, t.dataType).string(8, t.name).bytes(9, t.raw);
      graph.message(5, tw);
    }
    graph.message(11, valueInfo(opts.input ?? 'input', ['batch', opts.inChannels ?? 3, 'height', 'width']));
    graph.message(
      12,
      valueInfo(opts.output ?? 'output', ['batch', opts.outChannels ?? 3, 'out_height', 'out_width'], opts.outputType),
    );
    const model = new ProtoWriter()
      .int(1, IR_VERSION)
      .string(2, opts.producer ?? 'crisp-convert')
      .string(3, '1')
      .message(7, graph)
      .message(8, new ProtoWriter().string(1, '').int(2, OPSET));
    if (opts.doc) model.string(6, opts.doc);
    return model.finish();
  }
}
