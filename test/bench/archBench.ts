/**
 * Architecture bench: one row per imported architecture in its released configuration (random weights from
 * the test-only PyTorch references — sr_reference.py for SPAN/RealPLKSR/OmniSR/RCAN/ESRGAN+/Real-CUGAN/MoSR, the
 * transformer references for SwinIR/HAT/DAT/SRFormer/FDAT/RGT/DRCT/ATD/DITN/DCTLSA/CRAFT — and the TypeScript RRDBNet generator, converted by Crisp),
 * fp32 on the CPU provider, on a 256×256 tile of a real photo: milliseconds per tile, input megapixels per second, and the cost
 * relative to the shipped SRVGGNetCompact in the same run (the figure tilingOf carries). Building the
 * checkpoints needs Debian's python3-torch (as the conversion tests do); without it the section says so and skips.
 * `npm run bench -- --only arch` (CRISP_BENCH_QUICK=1: one timed run per row instead of three, the largest rows left out;
 * CRISP_BENCH_ARCH=DAT-light,SRFormer-light: only the rows whose label starts with one of those names).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { convertBytes, convertModelFile } from '../../engine/convert/convert.js';
import { randomRrdb } from '../convert/support/reference.js';
import { writeSafetensors } from '../convert/support/torchWriters.js';
import { PYTHON } from '../convert/support/golden.js';
import { photoCrop } from '../convert/support/transformerReference.js';
import { ONNX_DIR } from '../helpers/paths.js';

const TILE = 256;
const SUPPORT = path.join(import.meta.dirname, '..', 'convert', 'support');
const SR_SCRIPT = path.join(SUPPORT, 'sr_reference.py');
/** The released configurations are not test cases (no goldens): the bench builds them with PyTorch. */
const hasTorch = (): boolean => spawnSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;

interface ArchRow {
  /** Row label: architecture and configuration. */
  label: string;
  /** The test-only reference that builds the checkpoint (test/convert/support). */
  script: string;
  /** Constructor config of the released model. */
  config: Record<string, unknown> & { in_chans: number };
  /** Left out of CRISP_BENCH_QUICK runs (minutes per tile on a small, shared CPU). */
  large?: boolean;
}

/** A row whose checkpoint sr_reference.py builds from its options (SPAN, RealPLKSR, OmniSR). */
interface SrRow {
  label: string;
  options: Record<string, unknown>;
}

const SR_ROWS: SrRow[] = [
  { label: 'SPAN ×4 (48 feat)', options: { arch: 'span', in: 3, out: 3, feat: 48, scale: 4, norm: true } },
  {
    label: 'RealPLKSR ×4 (64 dim, 28 blocks, kernel 17)',
    options: {
      arch: 'realplksr',
      dim: 64,
      blocks: 28,
      scale: 4,
      kernel: 17,
      split: 0.25,
      ea: true,
      layerNorm: false,
      dysample: false,
    },
  },
  {
    label: 'RealPLKSR DySample ×4 (64 dim, 28 blocks, LayerNorm)',
    options: {
      arch: 'realplksr',
      dim: 64,
      blocks: 28,
      scale: 4,
      kernel: 17,
      split: 0.25,
      ea: true,
      layerNorm: true,
      dysample: true,
    },
  },
  {
    label: 'OmniSR ×4 (64 feat, 5 groups × 1 block, window 8)',
    options: {
      arch: 'omnisr',
      in: 3,
      out: 3,
      feat: 64,
      blocks: 1,
      groups: 5,
      window: 8,
      pe: true,
      bias: true,
      scale: 4,
    },
  },
  {
    label: 'RCAN ×4 (64 feat, 10×20 blocks, reduction 16)',
    options: { arch: 'rcan', colors: 3, feat: 64, groups: 10, blocks: 20, reduction: 16, scale: 4, norm: true },
  },
  {
    label: 'ESRGAN+ ×4 (64 feat, 23 blocks, 32 grow)',
    options: { arch: 'esrganplus', in: 3, out: 3, feat: 64, grow: 32, blocks: 23, ups: 2 },
  },
  { label: 'Real-CUGAN ×2 (UpCunet2x)', options: { arch: 'realcugan', variant: '2x' } },
  { label: 'Real-CUGAN ×3 (UpCunet3x)', options: { arch: 'realcugan', variant: '3x' } },
  { label: 'Real-CUGAN ×4 (UpCunet4x)', options: { arch: 'realcugan', variant: '4x' } },
  { label: 'Real-CUGAN ×2 (UpCunet2x_fast)', options: { arch: 'realcugan', variant: 'fast' } },
  {
    label: 'MoSR ×4 (64 dim, 24 blocks, PixelShuffle)',
    options: { arch: 'mosr', dim: 64, blocks: 24, kernel: 7, expansion: 1.5, upsampler: 'ps', scale: 4 },
  },
  {
    label: 'MoSR DySample ×4 (64 dim, 24 blocks)',
    options: { arch: 'mosr', dim: 64, blocks: 24, kernel: 7, expansion: 1.5, upsampler: 'dys', scale: 4 },
  },
];

/** Released configurations (the authors' ×4 option files), built by the transformer references. */
const ROWS: ArchRow[] = [
  {
    label: 'DAT ×4 (180 dim, 6×6 blocks, 8×32, ffn ×4)',
    script: 'dat_reference.py',
    config: datConfig({ expansion_factor: 4, split_size: [8, 32] }),
    large: true,
  },
  {
    label: 'DAT-S ×4 (180 dim, 6×6 blocks, 8×16, ffn ×2)',
    script: 'dat_reference.py',
    config: datConfig({ expansion_factor: 2, split_size: [8, 16] }),
    large: true,
  },
  {
    label: 'DAT-2 ×4 (180 dim, 6×6 blocks, 8×32, ffn ×2)',
    script: 'dat_reference.py',
    config: datConfig({ expansion_factor: 2, split_size: [8, 32] }),
    large: true,
  },
  {
    label: 'DAT-light ×4 (60 dim, 1×18 blocks, 8×32)',
    script: 'dat_reference.py',
    config: datConfig({
      embed_dim: 60,
      depth: [18],
      num_heads: [6],
      expansion_factor: 2,
      split_size: [8, 32],
      upsampler: 'pixelshuffledirect',
      resi_connection: '3conv',
    }),
  },
  {
    label: 'SRFormer ×4 (180 dim, 6×6 blocks, window 22)',
    script: 'srformer_reference.py',
    config: srformerConfig({}),
    large: true,
  },
  {
    label: 'SRFormer-light ×4 (60 dim, 4×6 blocks, window 16)',
    script: 'srformer_reference.py',
    config: srformerConfig({
      embed_dim: 60,
      depths: [6, 6, 6, 6],
      num_heads: [6, 6, 6, 6],
      window_size: 16,
      upsampler: 'pixelshuffledirect',
    }),
  },
  {
    label: 'SwinIR-S lightweight ×4 (60 dim, 4×6 blocks, window 8)',
    script: 'swinir_reference.py',
    config: swinirConfig({
      embed_dim: 60,
      depths: [6, 6, 6, 6],
      num_heads: [6, 6, 6, 6],
      upsampler: 'pixelshuffledirect',
    }),
  },
  {
    label: 'SwinIR-M classical ×4 (180 dim, 6×6 blocks, window 8)',
    script: 'swinir_reference.py',
    config: swinirConfig({}),
  },
  {
    label: 'SwinIR-L real-world ×4 (240 dim, 9×6 blocks, 3conv)',
    script: 'swinir_reference.py',
    config: swinirConfig({
      embed_dim: 240,
      depths: new Array<number>(9).fill(6),
      num_heads: new Array<number>(9).fill(8),
      upsampler: 'nearest+conv',
      resi_connection: '3conv',
    }),
    large: true,
  },
  {
    label: 'HAT-S ×4 (144 dim, 6×6 blocks, window 16, CAB ÷24)',
    script: 'hat_reference.py',
    config: hatConfig({ embed_dim: 144, compress_ratio: 24, squeeze_factor: 24 }),
  },
  {
    label: 'HAT ×4 (180 dim, 6×6 blocks, window 16, CAB ÷3)',
    script: 'hat_reference.py',
    config: hatConfig({}),
    large: true,
  },
  {
    label: 'HAT-L ×4 (180 dim, 12×6 blocks, window 16, CAB ÷3)',
    script: 'hat_reference.py',
    config: hatConfig({ depths: new Array<number>(12).fill(6), num_heads: new Array<number>(12).fill(6) }),
    large: true,
  },
  {
    label: 'FDAT-tiny ×4 (96 dim, 2×4 blocks, window 8, pixelshuffle)',
    script: 'fdat_reference.py',
    config: fdatConfig({
      embed_dim: 96,
      num_groups: 2,
      depth_per_group: 2,
      num_heads: 3,
      ffn_expansion_ratio: 1.5,
      upsampler_type: 'pixelshuffle',
    }),
  },
  {
    label: 'FDAT-medium ×4 (120 dim, 4×6 blocks, window 8)',
    script: 'fdat_reference.py',
    config: fdatConfig({}),
  },
  {
    label: 'RGT ×4 (180 dim, 8×6 blocks, 8×32, mlp ×2)',
    script: 'rgt_reference.py',
    config: rgtConfig(8),
    large: true,
  },
  {
    label: 'RGT-S ×4 (180 dim, 6×6 blocks, 8×32, mlp ×2)',
    script: 'rgt_reference.py',
    config: rgtConfig(6),
    large: true,
  },
  {
    label: 'DRCT ×4 (180 dim, 6 groups, window 16, growth 32)',
    script: 'drct_reference.py',
    config: drctConfig({}),
    large: true,
  },
  {
    label: 'DRCT-L ×4 (180 dim, 12 groups, window 16, growth 32)',
    script: 'drct_reference.py',
    config: drctConfig({ num_heads: new Array<number>(12).fill(6) }),
    large: true,
  },
  {
    label: 'ATD ×4 (210 dim, 6×6 layers, window 16, 128 tokens)',
    script: 'atd_reference.py',
    config: {
      in_chans: 3,
      embed_dim: 210,
      depths: [6, 6, 6, 6, 6, 6],
      num_heads: [6, 6, 6, 6, 6, 6],
      window_size: 16,
      category_size: 256,
      num_tokens: 128,
      reducted_dim: 20,
      convffn_kernel_size: 5,
      mlp_ratio: 2,
      upsampler: 'pixelshuffle',
      upscale: 4,
    },
    large: true,
  },
  {
    label: 'ATD-light ×4 (48 dim, 4×6 layers, window 16, 64 tokens)',
    script: 'atd_reference.py',
    config: {
      in_chans: 3,
      embed_dim: 48,
      depths: [6, 6, 6, 6],
      num_heads: [4, 4, 4, 4],
      window_size: 16,
      category_size: 128,
      num_tokens: 64,
      reducted_dim: 8,
      convffn_kernel_size: 7,
      mlp_ratio: 1,
      upsampler: 'pixelshuffledirect',
      upscale: 4,
    },
  },
  {
    label: 'DITN ×4 (60 dim, 4 ITL + 4 SAL)',
    script: 'ditn_reference.py',
    config: {
      in_chans: 3,
      dim: 60,
      ITL_blocks: 4,
      SAL_blocks: 4,
      UFONE_blocks: 1,
      ffn_expansion_factor: 2,
      upscale: 4,
    },
  },
  {
    label: 'DCTLSA ×4 (55 feat, 6 LSAB, window 16)',
    script: 'dctlsa_reference.py',
    config: { in_chans: 3, nf: 55, upscale: 4 },
  },
  {
    label: 'CRAFT ×4 (48 dim, 4 groups of 2, window 4×16)',
    script: 'craft_reference.py',
    config: { in_chans: 3, embed_dim: 48, depths: [2, 2, 2, 2], num_heads: [6, 6, 6, 6], upscale: 4 },
  },
];

/** traiNNer-redux's fdat_medium (the other presets override widths and the tail). */
function fdatConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    scale: 4,
    embed_dim: 120,
    num_groups: 4,
    depth_per_group: 3,
    num_heads: 4,
    window_size: 8,
    ffn_expansion_ratio: 2,
    aim_reduction_ratio: 8,
    mid_dim: 64,
    upsampler_type: 'transpose+conv',
    ...over,
  };
}

/** RGT's released ×4 option files (RGT: 8 groups, RGT-S: 6). */
function rgtConfig(groups: number): ArchRow['config'] {
  return {
    in_chans: 3,
    embed_dim: 180,
    depth: new Array<number>(groups).fill(6),
    num_heads: new Array<number>(groups).fill(6),
    mlp_ratio: 2,
    upscale: 4,
    resi_connection: '1conv',
    split_size: [8, 32],
    c_ratio: 0.5,
    img_size: 64,
  };
}

/** DRCT's released ×4 option files: window 16, growth 32, mlp ratio 2, trained at 64². */
function drctConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    img_size: 64,
    embed_dim: 180,
    num_heads: [6, 6, 6, 6, 6, 6],
    window_size: 16,
    mlp_ratio: 2,
    gc: 32,
    upscale: 4,
    ...over,
  };
}

/** SwinIR's released ×4 option files: window 8, mlp ratio 2, 64 tail features. */
function swinirConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    img_size: 64,
    embed_dim: 180,
    depths: [6, 6, 6, 6, 6, 6],
    num_heads: [6, 6, 6, 6, 6, 6],
    window_size: 8,
    mlp_ratio: 2,
    upscale: 4,
    upsampler: 'pixelshuffle',
    resi_connection: '1conv',
    num_feat: 64,
    ...over,
  };
}

/** HAT's released ×4 option files: window 16, overlap ratio 0.5, mlp ratio 2, squeeze 30, compress 3. */
function hatConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    embed_dim: 180,
    depths: [6, 6, 6, 6, 6, 6],
    num_heads: [6, 6, 6, 6, 6, 6],
    window_size: 16,
    compress_ratio: 3,
    squeeze_factor: 30,
    overlap_ratio: 0.5,
    mlp_ratio: 2,
    upscale: 4,
    num_feat: 64,
    ...over,
  };
}

function datConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    embed_dim: 180,
    depth: [6, 6, 6, 6, 6, 6],
    num_heads: [6, 6, 6, 6, 6, 6],
    upscale: 4,
    upsampler: 'pixelshuffle',
    resi_connection: '1conv',
    img_size: 64,
    ...over,
  };
}

function srformerConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    embed_dim: 180,
    depths: [6, 6, 6, 6, 6, 6],
    num_heads: [6, 6, 6, 6, 6, 6],
    window_size: 22,
    mlp_ratio: 2,
    upscale: 4,
    upsampler: 'pixelshuffle',
    resi_connection: '1conv',
    img_size: 64,
    ...over,
  };
}

/** Median milliseconds of `runs` timed runs on one tile, after one untimed warm-up run. */
async function msPerTile(model: Uint8Array | string, input: Float32Array, runs: number): Promise<number> {
  const opts: ort.InferenceSession.SessionOptions = { executionProviders: ['cpu'], logSeverityLevel: 3 };
  const session =
    typeof model === 'string'
      ? await ort.InferenceSession.create(model, opts)
      : await ort.InferenceSession.create(model, opts);
  try {
    const feed = { [session.inputNames[0]!]: new ort.Tensor('float32', input, [1, 3, TILE, TILE]) };
    await session.run(feed); // first-run allocations are not counted
    const times: number[] = [];
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      await session.run(feed);
      times.push(performance.now() - t0);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
  } finally {
    await session.release();
  }
}

/**
 * The catalog's compact ×4 model (SRVGGNetCompact) on the same tile in the same run: the ratio to it survives
 * a busy machine better than the milliseconds do.
 */
const BASELINE = 'realesr-general-x4v3.onnx';

export async function archBench(): Promise<void> {
  console.log(
    `\nArchitectures (imported checkpoints, released configurations, random weights; fp32, cpu provider, ${TILE}² tile)`,
  );
  if (!hasTorch()) {
    console.log('skipped: building the checkpoints needs python3-torch');
    return;
  }
  const quick = process.env.CRISP_BENCH_QUICK === '1';
  const runs = quick ? 1 : 3;
  const pick = process.env.CRISP_BENCH_ARCH?.split(',').filter(Boolean);
  const rows = pick ? ROWS.filter((r) => pick.some((p) => r.label.startsWith(`${p} `))) : ROWS;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-arch-bench-'));
  try {
    const input = await photoCrop({ name: 'tile', image: 'set14/baboon.png', width: TILE, height: TILE }, 3);
    const line = (label: string, ms: number, base: number | null) =>
      console.log(
        `${label.padEnd(50)} ${ms.toFixed(0).padStart(9)} ${((TILE * TILE) / 1e6 / (ms / 1000)).toFixed(4).padStart(8)} ${base ? `${(ms / base).toFixed(1)}×`.padStart(12) : ''}`,
      );
    console.log(
      `${'architecture'.padEnd(50)} ${'ms / tile'.padStart(9)} ${'MP/s'.padStart(8)} ${'× compact'.padStart(12)}`,
    );
    const baselineFile = path.join(ONNX_DIR, BASELINE);
    const base = existsSync(baselineFile) ? await msPerTile(baselineFile, input, runs) : null;
    if (base) line(`baseline: ${BASELINE} (SRVGGNetCompact ×4)`, base, null);
    if (!pick || pick.includes('RRDBNet')) {
      // ESRGAN x4plus sizes, from the TypeScript random-weight generator.
      const rrdb = randomRrdb({ layout: 'basicsr', numBlocks: 23, scale: 4, numFeat: 64, numGrowCh: 32 });
      const onnx = (await convertBytes(writeSafetensors(rrdb.dict), 'safetensors')).onnx;
      line('RRDBNet ×4 (ESRGAN: 64 feat, 23 blocks, 32 grow)', await msPerTile(onnx, input, runs), base);
    }
    for (const [i, row] of SR_ROWS.entries()) {
      if (pick && !pick.some((p) => row.label.startsWith(`${p} `))) continue;
      const dir = path.join(tmp, `sr${i}`);
      mkdirSync(dir, { recursive: true });
      // sr_reference.py tames its random network on one input: a 40² patch of the same photo (Real-CUGAN's
      // reference reflects up to 38 pixels, so it needs that much).
      const small = path.join(tmp, 'small.bin');
      writeFileSync(small, await photoCrop({ name: 'small', image: 'set14/baboon.png', width: 40, height: 40 }, 3));
      const inputs = [{ file: small, c: 3, h: 40, w: 40 }];
      const golden = path.join(dir, 'golden');
      const job = { dir, golden, seed: 100 + i, wrapper: 'params_ema', inputs, ...row.options };
      execFileSync(PYTHON, [SR_SCRIPT, JSON.stringify([job])], { stdio: 'pipe' });
      const onnx = (await convertBytes(readFileSync(path.join(dir, 'model.safetensors')), 'safetensors')).onnx;
      line(row.label, await msPerTile(onnx, input, runs), base);
    }
    for (const [i, row] of rows.entries()) {
      if (quick && row.large) {
        console.log(`${row.label.padEnd(50)} ${'(QUICK: left out)'.padStart(18)}`);
        continue;
      }
      const dir = path.join(tmp, `row${i}`);
      mkdirSync(dir, { recursive: true });
      const jobs = path.join(dir, 'jobs.json');
      const job = { dir, golden: path.join(dir, 'golden'), seed: i + 1, config: row.config, inputs: [] };
      writeFileSync(jobs, JSON.stringify([job]));
      execFileSync(PYTHON, [path.join(SUPPORT, row.script), jobs], { stdio: 'pipe' });
      const onnx = (await convertModelFile(path.join(dir, 'model.pth'))).onnx;
      line(row.label, await msPerTile(onnx, input, runs), base);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
