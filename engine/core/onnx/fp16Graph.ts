/**
 * The fp16 graph of an fp32 model, for GPU providers (issue 37: on the H100, fp16 WebGPU ran 720×1280 tiles 3.3×
 * faster than fp32, which falls off a cliff above ~0.9 MP). Weights become float16; the graph's inputs and outputs
 * stay float32 with a Cast at each end, so callers feed and read the same tensors as before.
 *
 * What needs care, by op:
 * - `Resize` roi/scales and `Upsample` scales must stay float32 (the ONNX spec types them `tensor(float)`), so
 *   the initializers and Constant outputs feeding them are left as they are.
 * - `Constant` nodes holding a float tensor become initializers (float16, or float32 where they feed a slot above).
 * - `Cast` to float becomes Cast to float16 (the tensor stays in the fp16 part of the graph).
 * - `ConstantOfShape` and other nodes whose float output comes from an attribute: a Cast to float16 follows them.
 * - `Range` has no float16 type in onnxruntime (the model would not load): a float Range runs in float32, its
 *   constant inputs kept float32, computed ones cast to float32 before it, and its output cast to float16 after.
 *   Which tensors are float is followed through the graph (floatTensors) so integer Ranges are left alone.
 * - `Pad` constants and `Clip` min/max are inputs since opset 11, so they are ordinary initializers and follow
 *   the data to float16 (an fp16 Pad or Clip needs its constant in fp16).
 * Deterministic: the same fp32 bytes always give the same fp16 bytes (the manifest pins them by sha256).
 */
import { editOnnx, type NewTensor, type NodeEntry } from './onnxEdit.js';
import { attr } from './onnxAttr.js';
import { ONNX_FLOAT, readOnnx, tensorFloats, type OnnxModelInfo, type OnnxTensorInfo } from './onnxReader.js';

export const ONNX_FLOAT16 = 10;

/** Inputs, by op, that the ONNX spec types float32 whatever the data's type. */
const FLOAT32_SLOTS: Record<string, readonly number[]> = { Resize: [1, 2], Upsample: [1] };
/** Ops whose float output type comes from an attribute, not from their inputs. */
const FLOAT_BY_ATTRIBUTE = new Set(['ConstantOfShape', 'RandomNormal', 'RandomUniform', 'EyeLike']);
/** Ops onnxruntime types without float16: a float one runs in float32 between Casts. */
const FLOAT32_OPS = new Set(['Range']);
/** Ops whose output is never float, whatever their inputs. */
const NEVER_FLOAT = new Set([
  'Shape',
  'Size',
  'Equal',
  'Less',
  'Greater',
  'LessOrEqual',
  'GreaterOrEqual',
  'Not',
  'And',
  'Or',
  'Xor',
  'IsNaN',
  'IsInf',
  'ArgMax',
  'ArgMin',
  'NonZero',
]);

/**
 * The float32 tensors of the graph, followed from the inputs and initializers node by node: a Cast says its type,
 * a Constant its value's, shape and comparison ops are never float, attribute-typed ops are float unless their
 * value or dtype says otherwise, `Where` takes its branches' type, and every other op its first input's (the
 * elementwise, shape-moving and reduction ops the converters write).
 */
export function floatTensors(info: OnnxModelInfo): Set<string> {
  const known = new Map<string, boolean>();
  for (const i of info.inputs) known.set(i.name, i.elemType === ONNX_FLOAT);
  for (const t of info.initializers) known.set(t.name, t.dataType === ONNX_FLOAT);
  for (const n of info.nodes) {
    const value = n.attrs.value;
    const tensor = typeof value === 'object' && !Array.isArray(value) ? value : undefined;
    let float: boolean;
    if (n.opType === 'Cast') float = n.attrs.to === ONNX_FLOAT;
    else if (n.opType === 'Constant')
      float = tensor ? tensor.dataType === ONNX_FLOAT : 'value_float' in n.attrs || 'value_floats' in n.attrs;
    else if (NEVER_FLOAT.has(n.opType)) float = false;
    else if (n.opType === 'ConstantOfShape') float = !tensor || tensor.dataType === ONNX_FLOAT;
    else if (FLOAT_BY_ATTRIBUTE.has(n.opType)) float = n.attrs.dtype === undefined || n.attrs.dtype === ONNX_FLOAT;
    else if (n.opType === 'Where') float = known.get(n.inputs[1] ?? '') ?? false;
    else float = known.get(n.inputs.find((x) => x !== '') ?? '') ?? false;
    for (const o of n.outputs) known.set(o, float);
  }
  return new Set([...known].filter(([, f]) => f).map(([name]) => name));
}

export interface Fp16Graph {
  bytes: Uint8Array;
  /** Float initializers (and Constant tensors) stored as float16. */
  converted: number;
  /** Those kept float32 because a float32-only input reads them. */
  keptFloat32: string[];
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half of a float, round to nearest even; beyond the half range it saturates at ±65504 rather than ±∞. */
export function toHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // Inf, NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7bff;
  if (e <= 0) {
    if (e < -10) return sign; // below half the smallest subnormal
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  const half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa rounds into the exponent, which is the right answer (up to 0x7c00 → saturate).
  const rounded = half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0);
  return sign | Math.min(rounded, 0x7bff);
}

/** The float value of an IEEE half (tests, and readers of fp16 tensors). */
export function fromHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

function halfTensor(t: OnnxTensorInfo, name = t.name): NewTensor {
  const values = tensorFloats(t);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = toHalf(values[i]!);
  return { name, dims: t.dims, dataType: ONNX_FLOAT16, raw: new Uint8Array(out.buffer) };
}

const asIs = (t: OnnxTensorInfo, name = t.name): NewTensor => ({
  name,
  dims: t.dims,
  dataType: t.dataType,
  raw: new Uint8Array(t.data),
});

export function fp16Graph(model: Uint8Array): Fp16Graph {
  const info = readOnnx(model);
  const isFloat = floatTensors(info);
  const initializerNames = new Set(info.initializers.map((t) => t.name));
  const constantNames = new Set(info.nodes.filter((n) => n.opType === 'Constant').flatMap((n) => n.outputs));
  const isConst = (x: string) => initializerNames.has(x) || constantNames.has(x);
  /** Float nodes that run in float32 between Casts (FLOAT32_OPS). */
  const float32Node = (n: { opType: string; outputs: string[] }) =>
    FLOAT32_OPS.has(n.opType) && isFloat.has(n.outputs[0] ?? '');
  // Names read by a float32-only slot: a float32-only op's constant inputs stay float32 too.
  const float32Only = new Set<string>();
  for (const n of info.nodes) {
    for (const slot of FLOAT32_SLOTS[n.opType] ?? []) if (n.inputs[slot]) float32Only.add(n.inputs[slot]);
    if (float32Node(n)) for (const x of n.inputs) if (x && isConst(x)) float32Only.add(x);
  }

  const graphInputs = new Set(info.inputs.map((i) => i.name));
  const floatInputs = info.inputs.filter((i) => i.elemType === ONNX_FLOAT && !initializerNames.has(i.name));
  const floatOutputs = new Set(info.outputs.filter((o) => o.elemType === ONNX_FLOAT).map((o) => o.name));
  const inside = (name: string) => (floatInputs.some((i) => i.name === name) ? `${name}__fp16` : name);
  const outsideName = (name: string) => (floatOutputs.has(name) ? `${name}__fp16` : name);

  const add: NewTensor[] = [];
  const drop = new Set<string>();
  const keptFloat32: string[] = [];
  let converted = 0;
  for (const t of info.initializers) {
    if (t.dataType !== ONNX_FLOAT) continue;
    // An initializer that is also a graph input may be overridden by a caller in float32: leave it.
    if (graphInputs.has(t.name)) continue;
    if (float32Only.has(t.name)) {
      keptFloat32.push(t.name);
      continue;
    }
    drop.add(t.name);
    add.push(halfTensor(t));
    converted++;
  }

  const nodes: NodeEntry[] = floatInputs.map((i) => ({
    add: {
      op: 'Cast',
      name: `${i.name}__to_fp16`,
      inputs: [i.name],
      outputs: [`${i.name}__fp16`],
      attrs: { to: attr.int(ONNX_FLOAT16) },
    },
  }));
  /** Keeps node `index` in float32 (its first output renamed `…__f32`) and casts that output back to fp16. */
  const keepFloat32 = (index: number, name: string, inputs: string[], outputs: string[]): void => {
    const out = outputs[0]!;
    nodes.push({ keep: index, inputs, outputs: [`${out}__f32`, ...outputs.slice(1)] });
    nodes.push({
      add: {
        op: 'Cast',
        name: `${name || out}__to_fp16`,
        inputs: [`${out}__f32`],
        outputs: [out],
        attrs: { to: attr.int(ONNX_FLOAT16) },
      },
    });
  };
  for (const [index, n] of info.nodes.entries()) {
    const inputs = n.inputs.map((x, slot) =>
      (FLOAT32_SLOTS[n.opType] ?? []).includes(slot) ? x : x === '' ? x : inside(x),
    );
    const outputs = n.outputs.map(outsideName);
    const rewired =
      inputs.some((x, k) => x !== n.inputs[k]) || outputs.some((x, k) => x !== n.outputs[k]) ? { inputs, outputs } : {};
    const value = n.attrs.value;
    if (
      n.opType === 'Constant' &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      value.dataType === ONNX_FLOAT
    ) {
      const name = n.outputs[0]!;
      if (float32Only.has(name)) {
        keptFloat32.push(name);
        add.push(asIs(value, outsideName(name)));
      } else {
        add.push(halfTensor(value, outsideName(name)));
        converted++;
      }
      continue;
    }
    if (n.opType === 'Cast' && n.attrs.to === ONNX_FLOAT) {
      nodes.push({
        add: { op: 'Cast', name: n.name, inputs, outputs, attrs: { to: attr.int(ONNX_FLOAT16) } },
      });
      continue;
    }
    if (float32Node(n)) {
      // Computed float inputs come back to float32 (a graph input already is); the output goes on in float16.
      const f32Inputs = n.inputs.map((x) => {
        if (!x || isConst(x) || !isFloat.has(x) || floatInputs.some((i) => i.name === x)) return x;
        nodes.push({
          add: {
            op: 'Cast',
            name: `${x}__to_f32_${index}`,
            inputs: [x],
            outputs: [`${x}__f32_${index}`],
            attrs: { to: attr.int(ONNX_FLOAT) },
          },
        });
        return `${x}__f32_${index}`;
      });
      keepFloat32(index, n.name, f32Inputs, outputs);
      continue;
    }
    if (FLOAT_BY_ATTRIBUTE.has(n.opType) && n.outputs[0] && isFloat.has(n.outputs[0])) {
      keepFloat32(index, n.name, inputs, outputs);
      continue;
    }
    nodes.push({ keep: index, ...rewired });
  }
  for (const o of floatOutputs) {
    nodes.push({
      add: {
        op: 'Cast',
        name: `${o}__to_fp32`,
        inputs: [`${o}__fp16`],
        outputs: [o],
        attrs: { to: attr.int(ONNX_FLOAT) },
      },
    });
  }
  const bytes = editOnnx(model, {
    nodes,
    dropInitializers: drop,
    addInitializers: add,
    note: `Crisp fp16 variant: ${converted} float tensors stored as float16, graph input and output float32 (Cast at each end).`,
  });
  return { bytes, converted, keptFloat32 };
}
