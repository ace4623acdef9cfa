/**
 * Per-architecture CPU speed of the converted graphs: `npm run bench -- --only arch` (CRISP_BENCH_QUICK=1: one
 * timed run per row and the largest configurations left out).
 *
 * Each row builds a state dict with the key names and shapes of a published configuration (random weights:
 * speed does not depend on their values), converts it with Crisp's own converter (convertStateDict), and times
 * onnxruntime's CPU provider (fp32, default options) on a 256² tile of a Set14 photo. Columns: the session
 * creation time, the median ms per tile, input MP/s, and the cost relative to SRVGGNetCompact (the shipped
 * realesr-general-x4v3, when ../shared has it) measured in the same run — the figure `tilingOf` carries.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { describeSpec } from '../../engine/convert/architecture.js';
import { convertStateDict } from '../../engine/convert/convert.js';
import type { StateDict, Tensor } from '../../engine/convert/stateDict.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

const TILE = 256;

/** A seeded normal-ish generator, so every run converts the same weights. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** Collects tensors of the given shapes, scaled 1/√fan-in so activations stay in range (no denormals, no inf). */
class DictMaker {
  readonly dict: StateDict = new Map();
  private readonly rand = rng(1);

  t(key: string, shape: number[], fill?: number): void {
    const n = shape.reduce((a, b) => a * b, 1);
    const fanIn = shape.length > 1 ? n / shape[0]! : 1;
    const scale = 1 / Math.sqrt(fanIn);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = fill ?? this.rand() * 2 * scale;
    this.dict.set(key, { shape, data } satisfies Tensor);
  }

  conv(prefix: string, out: number, inp: number, k = 3): void {
    this.t(`${prefix}.weight`, [out, inp, k, k]);
    this.t(`${prefix}.bias`, [out]);
  }

  linear(prefix: string, out: number, inp: number): void {
    this.t(`${prefix}.weight`, [out, inp]);
    this.t(`${prefix}.bias`, [out]);
  }

  norm(prefix: string, c: number): void {
    this.t(`${prefix}.weight`, [c], 1);
    this.t(`${prefix}.bias`, [c], 0);
  }
}

interface SwinirShape {
  embed: number;
  depths: number[];
  heads: number;
  window: number;
  upsampler: 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv';
  resi: '1conv' | '3conv';
  scale: number;
}

/** SwinIR's released key layout (JingyunLiang/SwinIR), mlp ratio 2, 64 tail features. */
function swinirDict(s: SwinirShape): StateDict {
  const d = new DictMaker();
  const e = s.embed;
  const resi = (prefix: string) => {
    if (s.resi === '1conv') return d.conv(prefix, e, e);
    d.conv(`${prefix}.0`, e / 4, e);
    d.conv(`${prefix}.2`, e / 4, e / 4, 1);
    d.conv(`${prefix}.4`, e, e / 4);
  };
  d.conv('conv_first', e, 3);
  d.norm('patch_embed.norm', e);
  s.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = `layers.${i}.residual_group.blocks.${j}`;
      d.norm(`${b}.norm1`, e);
      d.t(`${b}.attn.relative_position_bias_table`, [(2 * s.window - 1) ** 2, s.heads]);
      d.linear(`${b}.attn.qkv`, 3 * e, e);
      d.linear(`${b}.attn.proj`, e, e);
      d.norm(`${b}.norm2`, e);
      d.linear(`${b}.mlp.fc1`, 2 * e, e);
      d.linear(`${b}.mlp.fc2`, e, 2 * e);
    }
    resi(`layers.${i}.conv`);
  });
  d.norm('norm', e);
  resi('conv_after_body');
  if (s.upsampler === 'pixelshuffledirect') {
    d.conv('upsample.0', 3 * s.scale * s.scale, e);
  } else {
    d.conv('conv_before_upsample.0', 64, e);
    for (let u = 0; u < Math.log2(s.scale); u++) {
      if (s.upsampler === 'pixelshuffle') d.conv(`upsample.${2 * u}`, 256, 64);
      else d.conv(`conv_up${u + 1}`, 64, 64);
    }
    if (s.upsampler === 'nearest+conv') d.conv('conv_hr', 64, 64);
    d.conv('conv_last', 3, 64);
  }
  return d.dict;
}

interface HatShape {
  embed: number;
  groups: number;
  compress: number;
  squeeze: number;
  scale: number;
}

/** HAT's released key layout (XPixelGroup/HAT): 6 blocks of 6 heads per group, window 16, overlap 0.5, mlp 2. */
function hatDict(s: HatShape): StateDict {
  const d = new DictMaker();
  const [e, ws, ows, heads] = [s.embed, 16, 24, 6];
  d.conv('conv_first', e, 3);
  d.norm('patch_embed.norm', e);
  for (let i = 0; i < s.groups; i++) {
    const g = `layers.${i}.residual_group`;
    for (let j = 0; j < 6; j++) {
      const b = `${g}.blocks.${j}`;
      d.norm(`${b}.norm1`, e);
      d.t(`${b}.attn.relative_position_bias_table`, [(2 * ws - 1) ** 2, heads]);
      d.linear(`${b}.attn.qkv`, 3 * e, e);
      d.linear(`${b}.attn.proj`, e, e);
      d.conv(`${b}.conv_block.cab.0`, e / s.compress, e);
      d.conv(`${b}.conv_block.cab.2`, e, e / s.compress);
      d.conv(`${b}.conv_block.cab.3.attention.1`, e / s.squeeze, e, 1);
      d.conv(`${b}.conv_block.cab.3.attention.3`, e, e / s.squeeze, 1);
      d.norm(`${b}.norm2`, e);
      d.linear(`${b}.mlp.fc1`, 2 * e, e);
      d.linear(`${b}.mlp.fc2`, e, 2 * e);
    }
    const o = `${g}.overlap_attn`;
    d.norm(`${o}.norm1`, e);
    d.linear(`${o}.qkv`, 3 * e, e);
    d.t(`${o}.relative_position_bias_table`, [(ws + ows - 1) ** 2, heads]);
    d.linear(`${o}.proj`, e, e);
    d.norm(`${o}.norm2`, e);
    d.linear(`${o}.mlp.fc1`, 2 * e, e);
    d.linear(`${o}.mlp.fc2`, e, 2 * e);
    d.conv(`layers.${i}.conv`, e, e);
  }
  d.norm('norm', e);
  d.conv('conv_after_body', e, e);
  d.conv('conv_before_upsample.0', 64, e);
  for (let u = 0; u < Math.log2(s.scale); u++) d.conv(`upsample.${2 * u}`, 256, 64);
  d.conv('conv_last', 3, 64);
  return d.dict;
}

export interface ArchBenchRow {
  name: string;
  /** Left out of CRISP_BENCH_QUICK runs (minutes per tile on a small CPU). */
  large?: boolean;
  dict: () => StateDict;
}

/** Rows for the window-attention transformers of issue 28 (SwinIR, HAT); other architectures add theirs. */
export const TRANSFORMER_ROWS: ArchBenchRow[] = [
  {
    name: 'SwinIR-S lightweight ×4',
    dict: () =>
      swinirDict({
        embed: 60,
        depths: [6, 6, 6, 6],
        heads: 6,
        window: 8,
        upsampler: 'pixelshuffledirect',
        resi: '1conv',
        scale: 4,
      }),
  },
  {
    name: 'SwinIR-M classical ×4',
    dict: () =>
      swinirDict({
        embed: 180,
        depths: [6, 6, 6, 6, 6, 6],
        heads: 6,
        window: 8,
        upsampler: 'pixelshuffle',
        resi: '1conv',
        scale: 4,
      }),
  },
  {
    name: 'SwinIR-L real-world ×4',
    large: true,
    dict: () =>
      swinirDict({
        embed: 240,
        depths: new Array<number>(9).fill(6),
        heads: 8,
        window: 8,
        upsampler: 'nearest+conv',
        resi: '3conv',
        scale: 4,
      }),
  },
  { name: 'HAT-S ×4', dict: () => hatDict({ embed: 144, groups: 6, compress: 24, squeeze: 24, scale: 4 }) },
  { name: 'HAT ×4', large: true, dict: () => hatDict({ embed: 180, groups: 6, compress: 3, squeeze: 30, scale: 4 }) },
  {
    name: 'HAT-L ×4',
    large: true,
    dict: () => hatDict({ embed: 180, groups: 12, compress: 3, squeeze: 30, scale: 4 }),
  },
];

async function tileInput(): Promise<Float32Array> {
  const { data } = await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
    .removeAlpha()
    .extract({ left: 120, top: 120, width: TILE, height: TILE })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const plane = TILE * TILE;
  const x = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) x[c * plane + i] = data[i * 3 + c]! / 255;
  return x;
}

interface Timing {
  createS: number;
  medianMs: number;
}

async function timeModel(model: Uint8Array | string, input: Float32Array, runs: number): Promise<Timing> {
  const t0 = performance.now();
  const session =
    typeof model === 'string'
      ? await ort.InferenceSession.create(model, { graphOptimizationLevel: 'all' })
      : await ort.InferenceSession.create(model, { graphOptimizationLevel: 'all' });
  const createS = (performance.now() - t0) / 1000;
  try {
    const feeds = { [session.inputNames[0]!]: new ort.Tensor('float32', input, [1, 3, TILE, TILE]) };
    await session.run(feeds); // warm-up: first-run allocations
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await session.run(feeds);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    return { createS, medianMs: times[Math.floor(times.length / 2)]! };
  } finally {
    await session.release();
  }
}

export async function archBench(rows: ArchBenchRow[] = TRANSFORMER_ROWS): Promise<void> {
  const quick = process.env.CRISP_BENCH_QUICK === '1';
  const runs = quick ? 1 : 3;
  const input = await tileInput();
  const mp = (TILE * TILE) / 1e6;
  console.log(
    `\nArchitectures: converted graphs, fp32, cpu provider (defaults), ${TILE}² tile, median of ${runs} run(s) after a warm-up — ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'})${quick ? ', QUICK (large rows left out)' : ''}. Shared, noisy machine: compare ratios within this run.`,
  );
  const header = ['architecture', 'detected as', 'params M', 'create s', 'ms / tile', 'MP/s', '× compact'];
  const lines: string[][] = [];
  const compactFile = path.join(ONNX_DIR, 'realesr-general-x4v3.onnx');
  let compactMs: number | null = null;
  if (existsSync(compactFile)) {
    const t = await timeModel(compactFile, input, runs);
    compactMs = t.medianMs;
    lines.push([
      'SRVGGNetCompact ×4 (realesr-general-x4v3)',
      'shipped ONNX',
      '1.2',
      t.createS.toFixed(1),
      t.medianMs.toFixed(0),
      (mp / (t.medianMs / 1000)).toFixed(3),
      '1',
    ]);
  }
  for (const row of rows) {
    if (quick && row.large) continue;
    const dict = row.dict();
    const params = [...dict.values()].reduce((n, t) => n + t.data.length, 0) / 1e6;
    const { onnx, spec } = convertStateDict(dict);
    const t = await timeModel(onnx, input, runs);
    lines.push([
      row.name,
      describeSpec(spec),
      params.toFixed(1),
      t.createS.toFixed(1),
      t.medianMs.toFixed(0),
      (mp / (t.medianMs / 1000)).toFixed(3),
      compactMs ? (t.medianMs / compactMs).toFixed(0) : '—',
    ]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(fmt(header));
  for (const l of lines) console.log(fmt(l));
}
