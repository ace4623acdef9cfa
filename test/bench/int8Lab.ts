/**
 * Sensitivity lab for int8 (not part of the suite): where does int8's error against fp32 come from?
 * node --import tsx test/bench/int8Lab.ts MODEL.onnx ALPHA MODE
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ActivationStats, type RangeMethod } from '../../engine/convert/int8/calibrate.js';
import { bundledCalibrationCrops } from '../../engine/convert/int8/calibrationSet.js';
import { equalizeModel } from '../../engine/convert/int8/equalize.js';
import { equalizablePairs } from '../../engine/core/onnx/equalizablePairs.js';
import { channelMagnitudes } from '../../engine/convert/int8/int8Build.js';
import { editOnnx } from '../../engine/core/onnx/onnxEdit.js';
import { ONNX_FLOAT, readOnnx, tensorFloats } from '../../engine/core/onnx/onnxReader.js';
import { branchlessPrelu } from '../../engine/core/onnx/preluRewrite.js';
import {
  calibrationModel,
  planQuantization,
  quantizeModel,
  quantizeWeights,
  type QuantizeOptions,
} from '../../engine/convert/int8/quantize.js';
import { openRawModel, type RawModel } from '../../engine/core/inference/rawModel.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { outputsOf, scoreOutputs, set14Pairs, set5Pairs } from './int8Heldout.js';

const file = process.argv[2] ?? 'realesr-general-x4v3.onnx';
const alpha = Number(process.argv[3] ?? 0.5);
const mode = process.argv[4] ?? 'basic';
const open = (b: Uint8Array) => openRawModel(b, { threads: 1 });
const original: Uint8Array = new Uint8Array(readFileSync(path.join(ONNX_DIR, file)));
const pairs = [...(await set5Pairs()), ...(await set14Pairs())];
const refModel = await open(original);
const refs = await outputsOf(refModel, pairs);
await refModel.release();
const crops = await bundledCalibrationCrops();
const calib = crops.filter((_, i) => i % 4 !== 3);

let m: Uint8Array = original;
if (alpha > 0) {
  const ps = equalizablePairs(readOnnx(original));
  const mags = await channelMagnitudes(original, [...new Set(ps.flatMap((p) => p.tensors))], calib, open);
  m = equalizeModel(original, (t) => mags.get(t), alpha);
}
m = branchlessPrelu(m).bytes;
const info = readOnnx(m);
const plan = planQuantization(info);
const stats = new ActivationStats();
const cal = await open(calibrationModel(m, plan));
for (const c of calib) {
  const out = await cal.run(c.data, [1, 3, c.size, c.size]);
  for (const t of plan.tensors) stats.add(t, out.get(t)!.data);
  stats.next();
}
await cal.release();

async function score(bytes: Uint8Array): Promise<string> {
  const q: RawModel = await open(bytes);
  const s = scoreOutputs(pairs, refs, await outputsOf(q, pairs));
  await q.release();
  const worstName = s.perImage.reduce((a, b) => (b.psnrY < a.psnrY ? b : a)).name;
  return `worst ${s.worst.toFixed(2)} (${worstName}) mean ${s.mean.toFixed(2)}`;
}
const q = (method: RangeMethod, o: QuantizeOptions = {}) => quantizeModel(m, stats.ranges(method), o);

function weightsOnly(): Uint8Array {
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const names = plan.convs.map((i) => info.nodes[i]!.inputs[1]!);
  return editOnnx(m, {
    dropInitializers: new Set(names),
    addInitializers: names.map((n) => {
      const t = inits.get(n)!;
      const f = tensorFloats(t);
      const { q: qq, scales } = quantizeWeights(f, t.dims[0]!);
      const per = f.length / t.dims[0]!;
      const d = new Float32Array(f.length).map((_, k) => qq[k]! * scales[Math.floor(k / per)]!);
      return { name: n, dims: t.dims, dataType: ONNX_FLOAT, raw: new Uint8Array(d.buffer) };
    }),
  });
}

console.log(`${file} alpha ${alpha}: ${plan.convs.length} convs quantized`);
if (mode === 'basic') {
  console.log(`equalized fp32 (sanity): ${await score(m)}`);
  for (const method of ['minmax', 'percentile', 'mse'] as const)
    console.log(`full nearest ${method}: ${await score(q(method))}`);
  console.log(`weights only (nearest): ${await score(weightsOnly())}`);
  for (const method of ['minmax', 'mse'] as const)
    console.log(`activations only ${method}: ${await score(q(method, { floatWeights: true }))}`);
}
if (mode === 'quick') {
  console.log(`full nearest mse: ${await score(q('mse'))}`);
  console.log(`weights only (nearest): ${await score(weightsOnly())}`);
  console.log(`activations only mse: ${await score(q('mse', { floatWeights: true }))}`);
}
if (mode === 'prepost') {
  // Which activations carry the error: conv outputs (before PReLU) or PReLU outputs (conv inputs)?
  const convOut = new Set(plan.convs.map((i) => info.nodes[i]!.outputs[0]!));
  const convIn = new Set(plan.convs.map((i) => info.nodes[i]!.inputs[0]!).filter((t) => !convOut.has(t)));
  console.log(
    `acts only, conv inputs (after PReLU) only: ${await score(q('mse', { floatWeights: true, floatActivations: convOut }))}`,
  );
  console.log(
    `acts only, conv outputs (before PReLU) only: ${await score(q('mse', { floatWeights: true, floatActivations: convIn }))}`,
  );
}
/** PReLU output → its input (the conv output), for tensors the plan quantizes on both sides. */
const preluPairs = new Map<string, string>();
for (const n of info.nodes)
  if (n.opType === 'Max' && plan.tensors.includes(n.outputs[0]!) && plan.tensors.includes(n.inputs[0]!))
    preluPairs.set(n.outputs[0]!, n.inputs[0]!);
function shared(method: RangeMethod) {
  const r = stats.ranges(method);
  for (const [post, pre] of preluPairs) r.set(post, r.get(pre)!);
  return r;
}
if (mode === 'shared') {
  console.log(`${preluPairs.size} PReLU outputs share their input's grid`);
  for (const method of ['minmax', 'mse'] as const) {
    console.log(`full nearest ${method}, shared: ${await score(quantizeModel(m, shared(method)))}`);
    console.log(
      `acts only ${method}, shared: ${await score(quantizeModel(m, shared(method), { floatWeights: true }))}`,
    );
  }
}
if (mode === 'noopt') {
  const ort = await import('onnxruntime-node');
  const convOut = new Set(plan.convs.map((i) => info.nodes[i]!.outputs[0]!));
  const convIn = new Set(plan.convs.map((i) => info.nodes[i]!.inputs[0]!).filter((t) => !convOut.has(t)));
  for (const [label, o] of [
    ['acts only both', { floatWeights: true }],
    ['acts only post', { floatWeights: true, floatActivations: convOut }],
    ['acts only pre', { floatWeights: true, floatActivations: convIn }],
  ] as const) {
    const bytes = q('mse', o);
    const s = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
    const outs: Float32Array[] = [];
    for (const p of pairs) {
      const { planarOf } = await import('./int8Heldout.js');
      const r = await s.run({ input: new ort.Tensor('float32', planarOf(p.lr), [1, 3, p.lr.height, p.lr.width]) });
      outs.push(Object.values(r)[0]!.data as Float32Array);
    }
    const sc = scoreOutputs(pairs, refs, outs);
    console.log(`${label} (graph optimization disabled): worst ${sc.worst.toFixed(2)} mean ${sc.mean.toFixed(2)}`);
  }
}
if (mode === 'dump') {
  const { writeFileSync } = await import('node:fs');
  writeFileSync('/tmp/w30-actsonly.onnx', q('mse', { floatWeights: true }));
  writeFileSync('/tmp/w30-full.onnx', q('mse'));
}
/** Per-channel means of each quantized conv's input, float and after its Q/DQ (for bias correction). */
async function inputMeans(ranges: Map<string, { min: number; max: number }>) {
  const { activationParams } = await import('../../engine/convert/int8/quantize.js');
  const means = new Map<number, { f: Float64Array; q: Float64Array }>();
  const c2 = await open(calibrationModel(m, plan));
  for (const c of calib) {
    const out = await c2.run(c.data, [1, 3, c.size, c.size]);
    for (const i of plan.convs) {
      const t = info.nodes[i]!.inputs[0]!;
      const v = out.get(t)!;
      const ch = v.dims[1]!;
      const plane = v.data.length / ch;
      const { scale, zeroPoint } = activationParams(ranges.get(t)!);
      const e = means.get(i) ?? { f: new Float64Array(ch), q: new Float64Array(ch) };
      for (let k = 0; k < ch; k++) {
        let sf = 0;
        let sq = 0;
        for (let j = k * plane; j < (k + 1) * plane; j++) {
          const x = v.data[j]!;
          sf += x;
          sq += (Math.min(255, Math.max(0, Math.round(x / scale) + zeroPoint)) - zeroPoint) * scale;
        }
        e.f[k]! += sf / plane / calib.length;
        e.q[k]! += sq / plane / calib.length;
      }
      means.set(i, e);
    }
  }
  await c2.release();
  return means;
}
/** Bias correction: b' = b − Σ (Wq·E[Q(x)] − W·E[x]), so each int8 conv's output mean matches fp32's. */
async function biasCorrected(
  ranges: Map<string, { min: number; max: number }>,
  weights?: Map<string, { q: Int8Array; scales: Float32Array }>,
) {
  const means = await inputMeans(ranges);
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const added: Array<{ name: string; dims: number[]; dataType: number; raw: Uint8Array }> = [];
  for (const i of plan.convs) {
    const n = info.nodes[i]!;
    const w = inits.get(n.inputs[1]!)!;
    const f = tensorFloats(w);
    const [outC = 0, inC = 0, kh = 1, kw = 1] = w.dims;
    const { q: qq, scales } = weights?.get(w.name) ?? quantizeWeights(f, outC);
    const b = n.inputs[2] ? Float32Array.from(tensorFloats(inits.get(n.inputs[2])!)) : undefined;
    if (!b) continue;
    const e = means.get(i)!;
    for (let o = 0; o < outC; o++) {
      let d = 0;
      for (let c = 0; c < inC; c++)
        for (let k = 0; k < kh * kw; k++) {
          const idx = (o * inC + c) * kh * kw + k;
          d += qq[idx]! * scales[o]! * e.q[c]! - f[idx]! * e.f[c]!;
        }
      b[o]! -= d;
    }
    added.push({
      name: n.inputs[2]!,
      dims: inits.get(n.inputs[2]!)!.dims,
      dataType: ONNX_FLOAT,
      raw: new Uint8Array(b.buffer),
    });
  }
  return editOnnx(m, { dropInitializers: new Set(added.map((a) => a.name)), addInitializers: added });
}
if (mode === 'bias') {
  const r = stats.ranges('mse');
  console.log(`full nearest mse: ${await score(quantizeModel(m, r))}`);
  const mb = await biasCorrected(r);
  console.log(`full nearest mse + bias correction: ${await score(quantizeModel(mb, r))}`);
}
if (mode === 'sens') {
  // One conv kept fp32 at a time (everything else int8), and one conv quantized alone.
  for (const i of plan.convs) {
    const keep = await score(q('mse', { floatConvs: new Set([i]) }));
    const alone = await score(q('mse', { floatConvs: new Set(plan.convs.filter((j) => j !== i)) }));
    console.log(`conv node ${i}: kept fp32 → ${keep}; only it int8 → ${alone}`);
  }
}
