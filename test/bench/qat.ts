/**
 * Quantization-aware fine-tuning glue (issue 30; build time only, not part of the suite). The training
 * itself is test/bench/qat.py (PyTorch, CPU); this file moves weights and ranges between it and the
 * TypeScript quantizer, so the graph that ships is built by the same quantizeModel as every other variant.
 *
 *   node --import tsx test/bench/qat.ts dump MODEL.onnx DIR
 *       the post-training int8 model exactly as `crisp models quantize` makes it (bundled calibration set),
 *       written as DIR/ptq.onnx, plus both graphs for qat.py: DIR/graph.json + graph.bin (the prepared fp32
 *       graph — equalized, branch-free PReLU — and the QDQ graph: nodes and every initializer), and
 *       onnxruntime's fp32 and int8 outputs on a few calibration crops, which qat.py's emulation must match
 *   node --import tsx test/bench/qat.ts build MODEL.onnx DIR TRAINED.json OUT.onnx
 *       the QDQ graph from qat.py's fine-tuned weights (their int8 values and scales as learned) and learned
 *       activation scales / zero points, through quantizeModel
 *   node --import tsx test/bench/qat.ts eval MODEL.onnx INT8.onnx
 *       int8 against fp32 on the held-out images (Set5 + Set14 ×4), through onnxruntime
 *   node --import tsx test/bench/qat.ts bars MODEL.onnx INT8.onnx
 *       issue 42's bars on the same images: against the ground truth (PSNR-Y, SSIM-Y) and against fp32 (worst
 *       image, 99.9th-percentile difference) — int8Bars.ts
 *   node --import tsx test/bench/qat.ts mixed MODEL.onnx DIR TRAINED.json [K,K,…]
 *       mixed precision: each conv's own share of int8's difference from fp32 (it alone int8), then the K most
 *       sensitive convs kept fp32 (Set5, against MODEL as the bars are; issue 42)
 *
 * Model paths may be bare names of the shared test models (../shared/models/onnx). The whole chain, one
 * command per model: test/bench/qat.sh.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildInt8Model } from '../../engine/convert/int8/int8Build.js';
import { bundledCalibrationCrops } from '../../engine/convert/int8/calibrationSet.js';
import { editOnnx, type NewTensor } from '../../engine/core/onnx/onnxEdit.js';
import { ONNX_FLOAT, readOnnx, type OnnxModelInfo, type OnnxTensorInfo } from '../../engine/core/onnx/onnxReader.js';
import { planQuantization, quantizeModel } from '../../engine/convert/int8/quantize.js';
import { openRawModel } from '../../engine/core/inference/rawModel.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { outputsOf, rgbOf, scoreOutputs, set14Pairs, set5Pairs, type HeldoutPair } from './int8Heldout.js';
import { psnrY } from './quality.js';
import { describeBars, int8Bars, p999AbsDiff } from './int8Bars.js';

const open = (b: Uint8Array) => openRawModel(b, { threads: 1 });
const modelFile = (f: string) => (f.includes('/') ? path.resolve(f) : path.join(ONNX_DIR, f));

/** Every initializer's values as float64 (exact for float32, int8, uint8 and int32). */
function valuesOf(t: OnnxTensorInfo): Float64Array {
  const d = new Uint8Array(t.data);
  const n = t.dims.reduce((a, b) => a * b, 1);
  const dv = new DataView(d.buffer);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (t.dataType === ONNX_FLOAT) out[i] = dv.getFloat32(i * 4, true);
    else if (t.dataType === 2) out[i] = dv.getUint8(i);
    else if (t.dataType === 3) out[i] = dv.getInt8(i);
    else if (t.dataType === 6) out[i] = dv.getInt32(i * 4, true);
    else if (t.dataType === 7) out[i] = Number(dv.getBigInt64(i * 8, true));
    else throw new Error(`initializer ${t.name}: data type ${t.dataType} not handled`);
  }
  return out;
}

class Blob {
  private readonly parts: Float64Array[] = [];
  private length = 0;
  push(v: Float64Array | Float32Array): { off: number; n: number } {
    const at = { off: this.length, n: v.length };
    this.parts.push(Float64Array.from(v));
    this.length += v.length;
    return at;
  }
  bytes(): Uint8Array {
    const all = new Float64Array(this.length);
    let o = 0;
    for (const p of this.parts) {
      all.set(p, o);
      o += p.length;
    }
    return new Uint8Array(all.buffer);
  }
}

function graphJson(info: OnnxModelInfo, blob: Blob) {
  return {
    input: info.inputs[0]!.name,
    output: info.outputs[0]!.name,
    nodes: info.nodes.map((n) => ({
      op: n.opType,
      inputs: n.inputs,
      outputs: n.outputs,
      attrs: Object.fromEntries(
        Object.entries(n.attrs).map(([k, v]) =>
          typeof v === 'object' && !Array.isArray(v) ? [k, { dims: v.dims, ...blob.push(valuesOf(v)) }] : [k, v],
        ),
      ),
    })),
    inits: Object.fromEntries(
      info.initializers.map((t) => [t.name, { dims: t.dims, dtype: t.dataType, ...blob.push(valuesOf(t)) }]),
    ),
  };
}

async function dump(file: string, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const original = new Uint8Array(readFileSync(file));
  const crops = await bundledCalibrationCrops();
  const build = await buildInt8Model(original, crops, { onProgress: (m) => console.error(`  ${m}`) });
  writeFileSync(path.join(dir, 'ptq.onnx'), build.bytes);
  writeFileSync(path.join(dir, 'prepared.onnx'), build.prepared);
  const blob = new Blob();
  const checks = [];
  const fp32 = await open(original);
  const int8 = await open(build.bytes);
  for (const crop of crops.filter((_, i) => i % 6 === 0)) {
    const dims = [1, 3, crop.size, crop.size];
    const f = [...(await fp32.run(crop.data, dims)).values()][0]!;
    const q = [...(await int8.run(crop.data, dims)).values()][0]!;
    checks.push({
      dims,
      input: blob.push(crop.data),
      outDims: f.dims,
      fp32: blob.push(f.data),
      int8: blob.push(q.data),
    });
  }
  await fp32.release();
  await int8.release();
  const json = {
    model: path.basename(file),
    method: build.method,
    techniques: build.techniques,
    graphs: { fp32: graphJson(readOnnx(build.prepared), blob), int8: graphJson(readOnnx(build.bytes), blob) },
    checks,
  };
  writeFileSync(path.join(dir, 'graph.bin'), blob.bytes());
  writeFileSync(path.join(dir, 'graph.json'), JSON.stringify(json));
  console.log(
    `${path.basename(file)}: ${build.quantizedConvs} int8 convs, ${build.method} ranges, held-out crops worst ${build.worstCropPsnrY.toFixed(2)} dB → ${dir}`,
  );
}

/** What qat.py writes: fine-tuned floats by initializer name, int8 weights with their scales, activation grids. */
interface Trained {
  floats: Record<string, { dims: number[]; values: number[] }>;
  weights: Record<string, { q: number[]; scales: number[] }>;
  activations: Record<string, { scale: number; zeroPoint: number }>;
  steps: number;
  minutes: number;
}

/** The prepared fp32 graph with qat.py's float tensors, and the trained int8 weights and activation grids. */
function trainedParts(dir: string, trainedFile: string) {
  const prepared = new Uint8Array(readFileSync(path.join(dir, 'prepared.onnx')));
  const t = JSON.parse(readFileSync(trainedFile, 'utf8')) as Trained;
  const floats: NewTensor[] = Object.entries(t.floats).map(([name, v]) => ({
    name,
    dims: v.dims,
    dataType: ONNX_FLOAT,
    raw: new Uint8Array(Float32Array.from(v.values).buffer),
  }));
  const model = editOnnx(prepared, { dropInitializers: new Set(Object.keys(t.floats)), addInitializers: floats });
  const weights = new Map(
    Object.entries(t.weights).map(([name, w]) => [
      name,
      { q: Int8Array.from(w.q), scales: Float32Array.from(w.scales) },
    ]),
  );
  return { model, weights, activationParams: new Map(Object.entries(t.activations)), steps: t.steps };
}

function buildTrained(dir: string, trainedFile: string, floatConvs?: ReadonlySet<number>): Uint8Array {
  const { model, weights, activationParams, steps } = trainedParts(dir, trainedFile);
  return quantizeModel(model, new Map(), {
    weights,
    activationParams,
    ...(floatConvs ? { floatConvs } : {}),
    note: `crisp int8 (QDQ, per-channel int8 weights and uint8 activation grids from quantization-aware fine-tuning, ${steps} steps)`,
  });
}

/**
 * Mixed precision, measured: each conv alone int8 (the rest fp32) on Set5 — mean squared difference from fp32 in
 * 8-bit levels² and the 99.9th percentile of |difference| — then the model with the K most sensitive convs kept fp32.
 */
async function mixed(fp32: Uint8Array, dir: string, trainedFile: string, ks: number[]): Promise<void> {
  const { model } = trainedParts(dir, trainedFile);
  const convs = planQuantization(readOnnx(model)).convs;
  const pairs = await set5Pairs();
  const outputsOfModel = async (bytes: Uint8Array) => {
    const m = await open(bytes);
    const outs = await outputsOf(m, pairs);
    await m.release();
    return outs;
  };
  // Two references: the QAT model's own float graph (the noise int8 adds, layer by layer) and the fp32 model the
  // user runs, which the bars judge against (QAT trained the float parts for int8, so they differ from it).
  const own = await outputsOfModel(model);
  const user = await outputsOfModel(fp32);
  // As the bars judge (int8Bars.ts): 8-bit images, the worst image's 99.9th percentile; MSE over all of them.
  const against = (outs: Float32Array[], refs: Float32Array[]) => {
    let se = 0;
    let n = 0;
    let p999 = 0;
    outs.forEach((o, k) => {
      const { width, height } = pairs[k]!.lr;
      const a = rgbOf(o, width * 4, height * 4);
      const b = rgbOf(refs[k]!, width * 4, height * 4);
      for (let i = 0; i < a.data.length; i++) se += (a.data[i]! - b.data[i]!) ** 2;
      n += a.data.length;
      p999 = Math.max(p999, p999AbsDiff(a, b));
    });
    return { mse: se / n, p999 };
  };
  const say = (d: { mse: number; p999: number }) => `MSE ${d.mse.toFixed(2)} levels², worst image's p99.9 ${d.p999}`;
  const differences = async (floatConvs: ReadonlySet<number>) => {
    const outs = await outputsOfModel(buildTrained(dir, trainedFile, floatConvs));
    const noise = against(outs, own);
    return { noise, line: `vs its float graph ${say(noise)}; vs fp32 ${say(against(outs, user))}` };
  };
  console.log(`all ${convs.length} convs int8: ${(await differences(new Set())).line}`);
  const alone: Array<{ conv: number; mse: number }> = [];
  for (const c of convs) {
    const d = await differences(new Set(convs.filter((j) => j !== c)));
    alone.push({ conv: c, mse: d.noise.mse });
    console.log(`only conv node ${c} int8: ${d.line}`);
  }
  const ranked = alone.sort((a, b) => b.mse - a.mse).map((a) => a.conv);
  for (const k of ks.filter((x) => x < convs.length)) {
    const keep = new Set(ranked.slice(0, k));
    console.log(`${k} most sensitive fp32 (${[...keep].join(', ')}): ${(await differences(keep)).line}`);
  }
}

interface Judged {
  worst: number;
  worstImage: string;
  mean: number;
  /** Mean PSNR-Y against HR, fp32 and int8, per set. */
  hr: Array<{ set: string; fp32: number; int8: number }>;
  perImage: string;
}

async function judge(original: Uint8Array, int8: Uint8Array, pairs: HeldoutPair[]): Promise<Judged> {
  const f = await open(original);
  const refs = await outputsOf(f, pairs);
  await f.release();
  const q = await open(int8);
  const outs = await outputsOf(q, pairs);
  await q.release();
  const s = scoreOutputs(pairs, refs, outs);
  const worst = s.perImage.reduce((a, b) => (b.psnrY < a.psnrY ? b : a));
  const hr = (['Set5', 'Set14'] as const).map((set) => {
    const part = set === 'Set5' ? pairs.slice(0, 5) : pairs.slice(5);
    const mean = (o: Float32Array[]) =>
      part.reduce((acc, p) => {
        const k = pairs.indexOf(p);
        return acc + psnrY(rgbOf(o[k]!, p.lr.width * 4, p.lr.height * 4), p.hr);
      }, 0) / part.length;
    return { set, fp32: mean(refs), int8: mean(outs) };
  });
  return {
    worst: s.worst,
    worstImage: worst.name,
    mean: s.mean,
    hr,
    perImage: s.perImage.map((x) => `${x.name} ${x.psnrY.toFixed(2)}`).join(', '),
  };
}

function describe(j: Judged): string {
  const hr = j.hr.map((h) => `${h.set} vs HR fp32 ${h.fp32.toFixed(2)} / int8 ${h.int8.toFixed(2)}`).join('; ');
  return `worst ${j.worst.toFixed(2)} dB (${j.worstImage}), mean ${j.mean.toFixed(2)} dB vs fp32; ${hr}\n  ${j.perImage}`;
}

async function heldoutPairs(): Promise<HeldoutPair[]> {
  return [...(await set5Pairs()), ...(await set14Pairs())];
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'dump') {
  await dump(modelFile(args[0]!), args[1]!);
} else if (mode === 'build') {
  writeFileSync(args[3]!, buildTrained(args[1]!, args[2]!));
} else if (mode === 'eval') {
  const original = new Uint8Array(readFileSync(modelFile(args[0]!)));
  const int8 = new Uint8Array(readFileSync(args[1]!));
  console.log(`${path.basename(args[1]!)}: ${describe(await judge(original, int8, await heldoutPairs()))}`);
} else if (mode === 'mixed') {
  const fp32 = new Uint8Array(readFileSync(modelFile(args[0]!)));
  await mixed(fp32, args[1]!, args[2]!, (args[3] ?? '4,8,12,16,24').split(',').map(Number));
} else if (mode === 'bars') {
  // Issue 42's bars: against the real picture and against fp32 (int8Bars.ts).
  const pairs = await heldoutPairs();
  const f = await open(new Uint8Array(readFileSync(modelFile(args[0]!))));
  const refs = await outputsOf(f, pairs);
  await f.release();
  const q = await open(new Uint8Array(readFileSync(args[1]!)));
  const outs = await outputsOf(q, pairs);
  await q.release();
  console.log(`${path.basename(args[1]!)}:\n${describeBars(int8Bars(pairs, refs, outs))}`);
} else {
  console.error('usage: qat.ts dump|build|eval|bars|mixed … (see the header)');
  process.exit(2);
}
