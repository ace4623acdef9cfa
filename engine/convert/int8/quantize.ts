/**
 * fp32 → QDQ int8 (the format onnxruntime's own quantizer writes): every quantized Conv reads
 * DequantizeLinear(QuantizeLinear(x)) activations (uint8, asymmetric, range from calibration) and
 * DequantizeLinear(int8 weights) with one symmetric scale per output channel, plus an int32 bias whose
 * scale is x_scale·w_scale; its output goes through QuantizeLinear → DequantizeLinear too. onnxruntime's CPU
 * provider fuses each DQ → Conv → Q group into one QLinearConv (u8s8, VNNI on x86), so int8 chains from conv
 * to conv; the ops in between (PReLU here) run in float on dequantized values.
 *
 * The first conv (reads the image) and the last one (writes the residual that is added to the upsampled
 * input) stay fp32 by default: they are a small share of the work and the most sensitive to rounding.
 */
import { editOnnx, type NewNode, type NewTensor, type NodeEntry } from '../../core/onnx/onnxEdit.js';
import { attr } from '../graph/onnxWriter.js';
import { ONNX_FLOAT, readOnnx, tensorFloats, type OnnxModelInfo } from '../../core/onnx/onnxReader.js';
import { CrispError } from '../../contract/errorCatalog.js';

const ONNX_UINT8 = 2;
const ONNX_INT8 = 3;
const ONNX_INT32 = 6;

export interface ActivationRange {
  min: number;
  max: number;
}

export interface QuantizePlan {
  /** Indices (in the original node list) of the Conv nodes that become int8. */
  convs: number[];
  /** Activation tensors that get a QuantizeLinear/DequantizeLinear pair, i.e. need a calibrated range. */
  tensors: string[];
}

export interface PlanOptions {
  /** Keep the first and the last Conv in fp32 (default true). */
  keepEndsFloat?: boolean;
  /** Original node indices of further Convs to keep in fp32 (sensitive layers). */
  floatConvs?: ReadonlySet<number>;
}

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class QuantizeError extends CrispError {
  override readonly name = 'QuantizeError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

/** Which convs to quantize and which activations need ranges; throws QuantizeError when nothing qualifies. */
export function planQuantization(info: OnnxModelInfo, opts: PlanOptions = {}): QuantizePlan {
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const graphOutputs = new Set(info.outputs.map((o) => o.name));
  const convs: number[] = [];
  info.nodes.forEach((n, i) => {
    const w = inits.get(n.inputs[1] ?? '');
    const b = n.inputs[2] ? inits.get(n.inputs[2]) : undefined;
    // Only convs with constant fp32 weights (and bias) can carry per-channel int8 weights.
    if (n.opType !== 'Conv' || !w || w.dataType !== ONNX_FLOAT || w.dims.length !== 4) return;
    if (n.inputs[2] && (!b || b.dataType !== ONNX_FLOAT)) return;
    if (graphOutputs.has(n.outputs[0] ?? '')) return;
    convs.push(i);
  });
  const chosen = ((opts.keepEndsFloat ?? true) ? convs.slice(1, -1) : convs).filter((i) => !opts.floatConvs?.has(i));
  if (chosen.length === 0) throw new QuantizeError('The model has no convolution that can be quantized to int8.');
  const tensors = new Set<string>();
  for (const i of chosen) {
    const n = info.nodes[i]!;
    tensors.add(n.inputs[0]!);
    tensors.add(n.outputs[0]!);
  }
  return { convs: chosen, tensors: [...tensors] };
}

/** uint8 asymmetric parameters for a range; the range is widened to include 0 so zero is exact (padding). */
export function activationParams(r: ActivationRange): { scale: number; zeroPoint: number } {
  const lo = Math.min(0, r.min);
  const hi = Math.max(0, r.max);
  const scale = hi > lo ? (hi - lo) / 255 : 1;
  const zeroPoint = Math.min(255, Math.max(0, Math.round(-lo / scale)));
  return { scale, zeroPoint };
}

/** Per-output-channel symmetric int8 weights ([-127, 127], so the negated range fits too). */
export function quantizeWeights(w: Float32Array, outChannels: number): { q: Int8Array; scales: Float32Array } {
  const per = w.length / outChannels;
  const q = new Int8Array(w.length);
  const scales = new Float32Array(outChannels);
  for (let c = 0; c < outChannels; c++) {
    let m = 0;
    for (let i = c * per; i < (c + 1) * per; i++) m = Math.max(m, Math.abs(w[i]!));
    const s = m > 0 ? m / 127 : 1;
    scales[c] = s;
    for (let i = c * per; i < (c + 1) * per; i++) q[i] = Math.max(-127, Math.min(127, Math.round(w[i]! / s)));
  }
  return { q, scales };
}

function bytesOf(a: Float32Array | Int8Array | Uint8Array | Int32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

export interface QuantizeOptions extends PlanOptions {
  /** Appended to the model's doc string. */
  note?: string;
  /** Pre-rounded int8 weights by initializer name (gptq.ts); others are rounded to nearest. */
  weights?: ReadonlyMap<string, { q: Int8Array; scales: Float32Array }>;
  /**
   * Given uint8 scale and zero point per activation tensor, used as they are instead of being derived from a
   * range (quantization-aware fine-tuning learns them; test/bench/qat.ts); tensors missing here use `ranges`.
   */
  activationParams?: ReadonlyMap<string, { scale: number; zeroPoint: number }>;
  /** Diagnostic (sensitivity analysis): Q/DQ on activations only, weights and biases stay float. */
  floatWeights?: boolean;
  /** Diagnostic, with floatWeights: activations left without Q/DQ (to measure one tensor's share of the error). */
  floatActivations?: ReadonlySet<string>;
}

/**
 * Builds the QDQ int8 model. `ranges` must hold a range for every tensor of planQuantization's result
 * (calibrate.ts measures them). Input and output names, types and shapes are unchanged.
 */
export function quantizeModel(
  model: Uint8Array,
  ranges: ReadonlyMap<string, ActivationRange>,
  opts: QuantizeOptions = {},
): Uint8Array {
  const info = readOnnx(model);
  const plan = planQuantization(info, opts);
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const added: NewTensor[] = [];
  const drop = new Set<string>();
  const scalar = (name: string, dataType: number, raw: Uint8Array): string => {
    added.push({ name, dims: [], dataType, raw });
    return name;
  };

  const params = new Map<string, { scale: number; zeroPoint: number }>();
  for (const t of plan.tensors) {
    const given = opts.activationParams?.get(t);
    if (given) {
      params.set(t, given);
      continue;
    }
    const r = ranges.get(t);
    if (!r || !Number.isFinite(r.min) || !Number.isFinite(r.max))
      throw new QuantizeError(`No calibrated range for activation '${t}'.`);
    params.set(t, activationParams(r));
  }

  // Q/DQ pair per activation, emitted right after the tensor's producer; consumers read the DQ output.
  const unquantized = (t: string) => opts.floatWeights === true && opts.floatActivations?.has(t) === true;
  const dqName = (t: string) => (unquantized(t) ? t : `${t}_dq`);
  const qdqAfter = new Map<string, NewNode[]>();
  for (const t of plan.tensors) {
    if (unquantized(t)) continue;
    const p = params.get(t)!;
    const s = scalar(`${t}_scale`, ONNX_FLOAT, bytesOf(new Float32Array([p.scale])));
    const z = scalar(`${t}_zero_point`, ONNX_UINT8, Uint8Array.of(p.zeroPoint));
    qdqAfter.set(t, [
      { op: 'QuantizeLinear', name: `${t}_Q`, inputs: [t, s, z], outputs: [`${t}_q`] },
      { op: 'DequantizeLinear', name: `${t}_DQ`, inputs: [`${t}_q`, s, z], outputs: [dqName(t)] },
    ]);
  }

  const weightNodes: NodeEntry[] = [];
  const newInputs = new Map<number, string[]>();
  for (const i of plan.convs) {
    const n = info.nodes[i]!;
    if (opts.floatWeights) {
      newInputs.set(i, [dqName(n.inputs[0]!), ...n.inputs.slice(1)]);
      continue;
    }
    const w = inits.get(n.inputs[1]!)!;
    const outC = w.dims[0]!;
    const { q, scales } = opts.weights?.get(w.name) ?? quantizeWeights(tensorFloats(w), outC);
    const wq = `${w.name}_quantized`;
    added.push({ name: wq, dims: w.dims, dataType: ONNX_INT8, raw: bytesOf(q) });
    added.push({ name: `${wq}_scale`, dims: [outC], dataType: ONNX_FLOAT, raw: bytesOf(scales) });
    added.push({ name: `${wq}_zero_point`, dims: [outC], dataType: ONNX_INT8, raw: new Uint8Array(outC) });
    weightNodes.push({
      add: {
        op: 'DequantizeLinear',
        name: `${wq}_DQ`,
        inputs: [wq, `${wq}_scale`, `${wq}_zero_point`],
        outputs: [`${w.name}_dq`],
        attrs: { axis: attr.int(0) },
      },
    });
    drop.add(w.name);
    const inputs = [dqName(n.inputs[0]!), `${w.name}_dq`];
    const biasName = n.inputs[2];
    if (biasName) {
      const b = tensorFloats(inits.get(biasName)!);
      const xScale = params.get(n.inputs[0]!)!.scale;
      const bScales = new Float32Array(outC);
      const bq = new Int32Array(outC);
      for (let c = 0; c < outC; c++) {
        bScales[c] = xScale * scales[c]!;
        bq[c] = Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, Math.round(b[c]! / bScales[c]!)));
      }
      const bqName = `${biasName}_quantized`;
      added.push({ name: bqName, dims: [outC], dataType: ONNX_INT32, raw: bytesOf(bq) });
      added.push({ name: `${bqName}_scale`, dims: [outC], dataType: ONNX_FLOAT, raw: bytesOf(bScales) });
      added.push({ name: `${bqName}_zero_point`, dims: [outC], dataType: ONNX_INT32, raw: new Uint8Array(outC * 4) });
      weightNodes.push({
        add: {
          op: 'DequantizeLinear',
          name: `${bqName}_DQ`,
          inputs: [bqName, `${bqName}_scale`, `${bqName}_zero_point`],
          outputs: [`${biasName}_dq`],
          attrs: { axis: attr.int(0) },
        },
      });
      // A bias shared by two convs with different input scales would need two quantized copies; not seen in SR graphs.
      drop.add(biasName);
      inputs.push(`${biasName}_dq`);
    }
    newInputs.set(i, inputs);
  }

  const entries: NodeEntry[] = [...weightNodes];
  for (const t of plan.tensors)
    if (info.inputs.some((x) => x.name === t)) entries.push(...(qdqAfter.get(t) ?? []).map((add) => ({ add })));
  info.nodes.forEach((n, i) => {
    const own = newInputs.get(i);
    const inputs = own ?? n.inputs.map((x) => (params.has(x) ? dqName(x) : x));
    const changed = own !== undefined || inputs.some((x, k) => x !== n.inputs[k]);
    entries.push(changed ? { keep: i, inputs } : { keep: i });
    for (const o of n.outputs) for (const add of qdqAfter.get(o) ?? []) entries.push({ add });
  });
  return editOnnx(model, {
    nodes: entries,
    dropInitializers: drop,
    addInitializers: added,
    ...(opts.note ? { note: opts.note } : {}),
  });
}

/** The same model with every planned activation added as an extra float output, for calibration runs. */
export function calibrationModel(model: Uint8Array, plan: QuantizePlan): Uint8Array {
  return editOnnx(model, { extraOutputs: plan.tensors.map((name) => ({ name, elemType: ONNX_FLOAT })) });
}
