/**
 * Calibrate → quantize → measure: the whole int8 step for one fp32 model, with no Python.
 *
 * Crops are split: three of every four calibrate the activation ranges, the fourth is held out to measure
 * int8 against fp32 (PSNR on Y of 8-bit outputs). Each range method is tried and the best held-out score
 * wins, so the manifest records the quality of the model that is actually written.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  fileSha256,
  INT8_QUALITY_BAR_DB,
  int8CacheDir,
  saveInt8Variant,
  type Int8Manifest,
  type Int8Variant,
} from '../../core/inference/int8Variant.js';
import { cpuFeatures } from '../../core/inference/cpuFeatures.js';
import { openRawModel, type RawModel } from '../../core/inference/rawModel.js';
import { ActivationStats, RANGE_METHODS, type RangeMethod } from './calibrate.js';
import {
  bundledCalibrationCrops,
  hasBundledCalibration,
  loadCalibrationCrops,
  syntheticCalibrationCrops,
  type CalibrationCrop,
} from './calibrationSet.js';
import { equalizablePairs } from '../../core/onnx/equalizablePairs.js';
import { equalizeModel } from './equalize.js';
import { toByte } from '../../core/pipeline/stitch.js';
import { ConvHessian, gptqQuantize } from './gptq.js';
import { editOnnx } from '../../core/onnx/onnxEdit.js';
import { branchlessPrelu } from '../../core/onnx/preluRewrite.js';
import { ONNX_FLOAT, readOnnx, tensorFloats } from '../../core/onnx/onnxReader.js';
import { calibrationModel, planQuantization, quantizeModel, quantizeWeights, type PlanOptions } from './quantize.js';

export interface Int8BuildOptions extends PlanOptions {
  /** Weight rounding: GPTQ against calibration inputs (default) or nearest. */
  rounding?: 'gptq' | 'nearest';
  /** Cross-layer equalization strength α (equalize.ts); 0 turns it off. Default 0.5. */
  equalize?: number;
  /** im2col patches sampled per crop per conv for GPTQ's Hessian (default 96). */
  hessianSamples?: number;
  /** Range methods to compare (default: all). */
  methods?: readonly RangeMethod[];
  /** Rewrite PReLU as the branch-free Mul + Max (preluRewrite.ts); default true. */
  branchlessPrelu?: boolean;
  /**
   * Quantize each PReLU's output on its input's grid (same scale and zero point), so the positive half passes
   * through exactly instead of being rounded a second time onto an unrelated grid; default true (needs the
   * branch-free rewrite, whose Max is where the PReLU output is produced).
   */
  sharedPreluGrid?: boolean;
  /** Opens model bytes for inspection; default onnxruntime on the CPU (tests may inject). */
  open?: (bytes: Uint8Array) => Promise<RawModel>;
  onProgress?: (message: string) => void;
}

export interface Int8BuildResult {
  bytes: Uint8Array;
  /** The fp32 graph that was quantized: equalized and PReLU-rewritten, the same function as the original. */
  prepared: Uint8Array;
  method: RangeMethod;
  /** Pooled over the held-out crops. */
  psnrYVsFp32: number;
  /** The worst held-out crop: what decides between methods and the quality bar (clipped ranges fail on one image, not on average). */
  worstCropPsnrY: number;
  /** Every method's held-out scores, best first. */
  scores: Array<{ method: RangeMethod; psnrYVsFp32: number; worstCropPsnrY: number }>;
  quantizedConvs: number;
  totalConvs: number;
  /** What was applied, in order (recorded in the manifest). */
  techniques: string[];
  calibrationCrops: number;
  evaluatedCrops: number;
}

/** Y (BT.601, MATLAB rgb2ycbcr scale) of planar float RGB as the 8-bit bytes the app writes (toByte). */
function lumaOf(planarRgb: Float32Array, plane: number): Float64Array {
  const y = new Float64Array(plane);
  for (let i = 0; i < plane; i++) {
    y[i] =
      16 +
      (65.481 * toByte(planarRgb[i]!) +
        128.553 * toByte(planarRgb[plane + i]!) +
        24.966 * toByte(planarRgb[2 * plane + i]!)) /
        255;
  }
  return y;
}

/** PSNR-Y of two [1,3,h,w] outputs, with a border of `border` pixels left out (edges see zero padding). */
export function psnrYPlanar(a: Float32Array, b: Float32Array, h: number, w: number, border = 4): number {
  const plane = h * w;
  const ya = lumaOf(a, plane);
  const yb = lumaOf(b, plane);
  let se = 0;
  let n = 0;
  for (let y = border; y < h - border; y++) {
    for (let x = border; x < w - border; x++) {
      se += (ya[y * w + x]! - yb[y * w + x]!) ** 2;
      n++;
    }
  }
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255) / (se / n));
}

/** Mean squared error pooled over crops → one PSNR, so one bad crop is not hidden by an identical one. */
async function scoreAgainst(
  candidate: RawModel,
  reference: Float32Array[],
  crops: CalibrationCrop[],
  outputName: string,
): Promise<{ pooled: number; worst: number }> {
  let mse = 0;
  let worst = Infinity;
  for (const [k, crop] of crops.entries()) {
    const out = (await candidate.run(crop.data, [1, 3, crop.size, crop.size])).get(outputName);
    if (!out) throw new Error('The quantized model returned no output');
    const [, , h = 0, w = 0] = out.dims;
    const p = psnrYPlanar(reference[k]!, out.data, h, w);
    worst = Math.min(worst, p);
    mse += p === Infinity ? 0 : (255 * 255) / 10 ** (p / 10);
  }
  mse /= crops.length;
  return { pooled: mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse), worst };
}

/** Per-channel magnitude (mean over crops of the channel's max |x|) of the tensors equalization scales. */
export async function channelMagnitudes(
  model: Uint8Array,
  tensors: string[],
  crops: CalibrationCrop[],
  open: (b: Uint8Array) => Promise<RawModel>,
): Promise<Map<string, Float32Array>> {
  const sums = new Map<string, Float32Array>();
  const m = await open(editOnnx(model, { extraOutputs: tensors.map((name) => ({ name, elemType: ONNX_FLOAT })) }));
  try {
    for (const crop of crops) {
      const out = await m.run(crop.data, [1, 3, crop.size, crop.size]);
      for (const t of tensors) {
        const v = out.get(t);
        if (!v) continue;
        const channels = v.dims[1] ?? 1;
        const plane = v.data.length / channels;
        const acc = sums.get(t) ?? new Float32Array(channels);
        for (let c = 0; c < channels; c++) {
          let mx = 0;
          for (let i = c * plane; i < (c + 1) * plane; i++) mx = Math.max(mx, Math.abs(v.data[i]!));
          acc[c]! += mx / crops.length;
        }
        sums.set(t, acc);
      }
    }
  } finally {
    await m.release();
  }
  return sums;
}

export async function buildInt8Model(
  original: Uint8Array,
  crops: CalibrationCrop[],
  opts: Int8BuildOptions = {},
): Promise<Int8BuildResult> {
  const open = opts.open ?? ((b: Uint8Array) => openRawModel(b));
  const progress = opts.onProgress ?? (() => undefined);
  const outputName = readOnnx(original).outputs[0]?.name ?? 'output';
  const held = crops.filter((_, i) => crops.length >= 4 && i % 4 === 3);
  const calib = crops.filter((c) => !held.includes(c));
  const evalSet = held.length > 0 ? held : crops;

  // Equalization changes weights, not the function: the fp32 reference below is still the original's output.
  let fp32 = original;
  const alpha = opts.equalize ?? 0.5;
  if (alpha > 0) {
    const pairs = equalizablePairs(readOnnx(original));
    if (pairs.length > 0) {
      progress(`equalizing channel ranges across ${pairs.length} layer pairs`);
      const mags = await channelMagnitudes(original, [...new Set(pairs.flatMap((p) => p.tensors))], calib, open);
      fp32 = equalizeModel(original, (t) => mags.get(t), alpha);
    }
  }
  // After equalization (which looks for the PReLUs): Mul + Max instead of PReLU, the same function without
  // branches; it stays in float between DequantizeLinear and QuantizeLinear (preluRewrite.ts).
  if (opts.branchlessPrelu ?? true) {
    const rewrite = branchlessPrelu(fp32);
    if (rewrite.rewritten > 0) progress(`PReLU as Mul + Max in ${rewrite.rewritten} places`);
    fp32 = rewrite.bytes;
  }
  const info = readOnnx(fp32);
  const plan = planQuantization(info, opts);

  progress(`calibrating on ${calib.length} crops`);
  const stats = new ActivationStats();
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const hessians = new Map<number, ConvHessian>();
  if ((opts.rounding ?? 'gptq') === 'gptq') {
    for (const i of plan.convs) {
      const n = info.nodes[i]!;
      const w = inits.get(n.inputs[1]!)!;
      const pads = Array.isArray(n.attrs.pads) ? n.attrs.pads : [0, 0, 0, 0];
      const plain = [n.attrs.strides, n.attrs.dilations].every(
        (a) => a === undefined || (Array.isArray(a) && a.every((v) => v === 1)),
      );
      // Only plain (stride 1, dilation 1, ungrouped) convs: the im2col sampler mirrors exactly that.
      if (!plain || (n.attrs.group !== undefined && n.attrs.group !== 1) || typeof n.attrs.auto_pad === 'string')
        continue;
      hessians.set(i, new ConvHessian(w.dims[1]!, w.dims[2]!, w.dims[3]!, [pads[0] ?? 0, pads[1] ?? 0]));
    }
  }
  const cal = await open(calibrationModel(fp32, plan));
  try {
    for (const crop of calib) {
      const out = await cal.run(crop.data, [1, 3, crop.size, crop.size]);
      for (const t of plan.tensors) {
        const v = out.get(t);
        if (!v) throw new Error(`Calibration did not produce activation '${t}'`);
        stats.add(t, v.data);
      }
      for (const [i, hess] of hessians) {
        const x = out.get(info.nodes[i]!.inputs[0]!)!;
        hess.add(x.data, x.dims[2]!, x.dims[3]!, opts.hessianSamples ?? 96);
      }
      stats.next();
    }
  } finally {
    await cal.release();
  }

  const ref = await open(original);
  const reference: Float32Array[] = [];
  try {
    for (const crop of evalSet) {
      const out = (await ref.run(crop.data, [1, 3, crop.size, crop.size])).get(outputName);
      if (!out) throw new Error('The fp32 model returned no output');
      reference.push(out.data);
    }
  } finally {
    await ref.release();
  }

  const weights = new Map<string, { q: Int8Array; scales: Float32Array }>();
  if (hessians.size > 0) progress(`rounding the weights of ${hessians.size} convolutions (GPTQ)`);
  for (const [i, hess] of hessians) {
    const w = inits.get(info.nodes[i]!.inputs[1]!)!;
    const f = tensorFloats(w);
    const { scales } = quantizeWeights(f, w.dims[0]!);
    weights.set(w.name, { q: gptqQuantize(f, w.dims[0]!, scales, hess), scales });
  }

  // PReLU output → its input (the conv output before it), where both are quantized.
  const preluInputs = new Map<string, string>();
  if (opts.sharedPreluGrid ?? true)
    for (const n of info.nodes)
      if (n.opType === 'Max' && plan.tensors.includes(n.outputs[0]!) && plan.tensors.includes(n.inputs[0]!))
        preluInputs.set(n.outputs[0]!, n.inputs[0]!);
  const rangesFor = (method: RangeMethod) => {
    const r = stats.ranges(method);
    for (const [post, pre] of preluInputs) r.set(post, r.get(pre)!);
    return r;
  };

  const candidates: Array<{ method: RangeMethod; bytes: Uint8Array; psnrYVsFp32: number; worstCropPsnrY: number }> = [];
  for (const method of opts.methods ?? RANGE_METHODS) {
    const bytes = quantizeModel(fp32, rangesFor(method), {
      ...opts,
      weights,
      note: `crisp int8 (QDQ, per-channel ${hessians.size > 0 ? 'GPTQ-rounded' : 'nearest-rounded'} weights, ${method} activation ranges${preluInputs.size > 0 ? ', PReLU outputs on their input grid' : ''})`,
    });
    const m = await open(bytes);
    try {
      const { pooled, worst } = await scoreAgainst(m, reference, evalSet, outputName);
      progress(`${method}: ${pooled.toFixed(2)} dB PSNR-Y against fp32 (worst crop ${worst.toFixed(2)} dB)`);
      candidates.push({ method, bytes, psnrYVsFp32: pooled, worstCropPsnrY: worst });
    } finally {
      await m.release();
    }
  }
  candidates.sort((a, b) => b.worstCropPsnrY - a.worstCropPsnrY || b.psnrYVsFp32 - a.psnrYVsFp32);
  const best = candidates[0]!;
  const totalConvs = info.nodes.filter((n) => n.opType === 'Conv').length;
  const techniques = [
    ...(alpha > 0 ? [`cross-layer equalization (α ${alpha})`] : []),
    ...(info.nodes.some((n) => n.opType === 'Max') ? ['branch-free PReLU'] : []),
    hessians.size > 0 ? 'GPTQ weight rounding' : 'nearest weight rounding',
    `${best.method} activation ranges (best of ${candidates.length})`,
    ...(preluInputs.size > 0 ? ['PReLU output on its input grid'] : []),
    `first and last conv fp32${opts.floatConvs?.size ? ` + ${opts.floatConvs.size} sensitive conv(s) fp32` : ''}`,
  ];
  return {
    techniques,
    bytes: best.bytes,
    prepared: fp32,
    method: best.method,
    psnrYVsFp32: best.psnrYVsFp32,
    worstCropPsnrY: best.worstCropPsnrY,
    scores: candidates.map(({ method, psnrYVsFp32, worstCropPsnrY }) => ({ method, psnrYVsFp32, worstCropPsnrY })),
    quantizedConvs: plan.convs.length,
    totalConvs,
    calibrationCrops: calib.length,
    evaluatedCrops: evalSet.length,
  };
}

export interface MakeInt8Options extends Int8BuildOptions {
  /** Folder of photos to calibrate on; default: the bundled set (the procedural one where it is missing). */
  calibrationDir?: string;
  /** Number of crops (default: 32 from a folder (24 calibrate, 8 measure); all 48 of the bundled set (36 + 12)). */
  crops?: number;
  /** Where the variant is written (default: the int8 cache). */
  outDir?: string;
  /** Measure int8 against fp32 speed on this CPU and record it (default true; the speed bar needs it). */
  measureSpeed?: boolean;
  /**
   * Whole held-out images to judge the variant on instead of the held-out crops (the shipped variants:
   * Set5 + Set14, scripts/makeShippedInt8.ts); `passed` is then decided on its worst image.
   */
  heldout?: { set: string; score: (int8: Uint8Array) => Promise<HeldoutScore> };
}

export interface HeldoutScore {
  images: number;
  worstPsnrY: number;
  worstImage: string;
  meanPsnrY: number;
}

export interface SpeedMeasurement {
  /** fp32 CPU time ÷ int8 CPU time (load on a shared machine disturbs CPU time least). */
  fp32OverInt8: number;
  wallFp32OverInt8: number;
  tile: number;
  runs: number;
}

/**
 * int8 against fp32 speed as the engine runs them on the CPU (fp32 with the branch-free PReLU, one
 * intra-op thread each), alternating run by run on one 256² tile so machine load hits both alike. The
 * tile is made of calibration crops: real image content, which is what PReLU and the kernels see in use.
 */
export async function measureInt8Speed(
  fp32: Uint8Array,
  int8: Uint8Array,
  crops: CalibrationCrop[],
  opts: { runs?: number; tile?: number; open?: (b: Uint8Array) => Promise<RawModel> } = {},
): Promise<SpeedMeasurement> {
  const tile = opts.tile ?? 256;
  const runs = opts.runs ?? 3;
  const open = opts.open ?? ((b: Uint8Array) => openRawModel(b, { threads: 1 }));
  const plane = tile * tile;
  const x = new Float32Array(3 * plane);
  for (let y = 0; y < tile; y++)
    for (let xx = 0; xx < tile; xx++) {
      const crop = crops[(Math.floor(y / 64) * Math.ceil(tile / 64) + Math.floor(xx / 64)) % crops.length]!;
      const cy = y % crop.size;
      const cx = xx % crop.size;
      for (let c = 0; c < 3; c++)
        x[c * plane + y * tile + xx] = crop.data[c * crop.size * crop.size + cy * crop.size + cx]!;
    }
  const models = [await open(branchlessPrelu(fp32).bytes), await open(int8)];
  try {
    const wall = [0, 0];
    const cpu = [0, 0];
    for (const m of models) await m.run(x, [1, 3, tile, tile]); // warm-up: the first run allocates the arena
    for (let r = 0; r < runs; r++)
      for (const [k, m] of models.entries()) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await m.run(x, [1, 3, tile, tile]);
        wall[k]! += performance.now() - t0;
        const c = process.cpuUsage(c0);
        cpu[k]! += c.user + c.system;
      }
    return { fp32OverInt8: cpu[0]! / cpu[1]!, wallFp32OverInt8: wall[0]! / wall[1]!, tile, runs };
  } finally {
    await Promise.all(models.map((m) => m.release()));
  }
}

/** Quantizes an fp32 model file and stores `<base>.int8.onnx` + manifest; answers the stored variant and the build. */
export async function makeInt8Variant(
  modelPath: string,
  opts: MakeInt8Options = {},
): Promise<{ variant: Int8Variant; build: Int8BuildResult }> {
  const fp32 = new Uint8Array(await readFile(modelPath));
  const kind: Int8Manifest['calibration']['kind'] = opts.calibrationDir
    ? 'folder'
    : hasBundledCalibration()
      ? 'bundled'
      : 'synthetic';
  const crops =
    kind === 'folder'
      ? await loadCalibrationCrops(opts.calibrationDir!, { count: opts.crops ?? 32 })
      : kind === 'bundled'
        ? await bundledCalibrationCrops(opts.crops ? { count: opts.crops } : {})
        : syntheticCalibrationCrops({ count: opts.crops ?? 32 });
  const build = await buildInt8Model(fp32, crops, opts);
  const heldout = opts.heldout ? { set: opts.heldout.set, ...(await opts.heldout.score(build.bytes)) } : undefined;
  const cpu = cpuFeatures();
  const speed =
    (opts.measureSpeed ?? true)
      ? {
          ...(await measureInt8Speed(fp32, build.bytes, crops)),
          cpu: { ...(cpu.model ? { model: cpu.model } : {}), int8Dot: cpu.int8Dot },
        }
      : undefined;
  const round2 = (v: number) => (Number.isFinite(v) ? Number(v.toFixed(2)) : 99);
  const manifest: Int8Manifest = {
    format: 1,
    source: { file: path.basename(modelPath), sha256: fileSha256(modelPath), bytes: fp32.length },
    createdAt: new Date().toISOString(),
    calibration: opts.calibrationDir
      ? { kind: 'folder', crops: crops.length, folder: path.resolve(opts.calibrationDir) }
      : { kind, crops: crops.length },
    method: build.method,
    quantizedConvs: build.quantizedConvs,
    totalConvs: build.totalConvs,
    psnrYVsFp32: Number.isFinite(build.psnrYVsFp32) ? Number(build.psnrYVsFp32.toFixed(2)) : 99,
    worstCropPsnrY: Number.isFinite(build.worstCropPsnrY) ? Number(build.worstCropPsnrY.toFixed(2)) : 99,
    evaluatedCrops: build.evaluatedCrops,
    passed: (heldout?.worstPsnrY ?? build.worstCropPsnrY) >= INT8_QUALITY_BAR_DB,
    ...(heldout
      ? {
          heldout: {
            ...heldout,
            worstPsnrY: round2(heldout.worstPsnrY),
            meanPsnrY: round2(heldout.meanPsnrY),
          },
        }
      : {}),
    ...(speed
      ? {
          speed: {
            ...speed,
            fp32OverInt8: round2(speed.fp32OverInt8),
            wallFp32OverInt8: round2(speed.wallFp32OverInt8),
          },
        }
      : {}),
    techniques: build.techniques,
  };
  const variant = await saveInt8Variant(opts.outDir ?? int8CacheDir(), modelPath, build.bytes, manifest);
  return { variant, build };
}
