/**
 * RGT checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/rgt_reference.py builds random-weight
 * models with the released key layout (attention masks, rpe_biases and index buffers included) — RGT at its
 * released size (180 dim, 8 groups × 6 blocks, 6 heads, 8×32 windows, mlp ×2, c_ratio 0.5), RGT-S's six groups at
 * a narrower width, and smaller ones with other windows, reduction ratios, 3conv, no qkv bias and 1× — on real
 * photo crops whose sides are not multiples of the window (the shifted-window masks and RG-SA's reduction floor
 * at new sizes).
 */
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rgt, type RgtSpec } from '../../engine/convert/architectures/rgt.js';
import { convertModelFile } from '../../engine/convert/convert.js';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { runOnnx } from './support/onnxRun.js';
import { expectMatchesPyTorch, referenceRun, type RefCase } from './support/transformerReference.js';

interface Case extends RefCase {
  spec: Partial<RgtSpec>;
  description: string;
}

const released = {
  in_chans: 3,
  embed_dim: 180,
  num_heads: [6, 6, 6, 6, 6, 6, 6, 6],
  mlp_ratio: 2.0,
  resi_connection: '1conv',
  split_size: [8, 32],
  c_ratio: 0.5,
  img_size: 64,
};
const small = { in_chans: 3, embed_dim: 64, mlp_ratio: 2.0, c_ratio: 0.5, img_size: 64 };

const CASES: Case[] = [
  {
    id: 'x4-released',
    seed: 91,
    wrapper: 'params',
    config: { ...released, depth: [6, 6, 6, 6, 6, 6, 6, 6], upscale: 4 },
    inputs: [{ name: 'baboon', image: 'set14/baboon.png', left: 120, top: 40, width: 20, height: 18 }],
    spec: { variant: 'RGT', depths: [6, 6, 6, 6, 6, 6, 6, 6], splitSize: [8, 32], reducedDim: 90, mlpRatio: 2 },
    description: 'RGT x4 (180 dim, 8×6 blocks, 6 heads, window 8×32, mlp ×2, 1conv)',
  },
  {
    // RGT-S's six groups and windows at a fifth of its width (its full size is x4-released's layout with two
    // fewer groups; the golden stays small).
    id: 'x2-rgt-s-narrow',
    seed: 92,
    wrapper: 'params_ema',
    config: { ...released, embed_dim: 60, depth: [2, 2, 2, 2, 2, 2], num_heads: [6, 6, 6, 6, 6, 6], upscale: 2 },
    inputs: [{ name: 'lenna', image: 'set14/lenna.png', left: 200, top: 210, width: 17, height: 16 }],
    spec: { variant: 'RGT-S', depths: [2, 2, 2, 2, 2, 2], reducedDim: 30, scale: 2 },
    description: 'RGT-S x2 (60 dim, 6×2 blocks, 6 heads, window 8×32, mlp ×2, 1conv)',
  },
  {
    id: 'x3-window4x8-3conv',
    seed: 93,
    config: {
      ...small,
      depth: [4, 4],
      num_heads: [4, 4],
      split_size: [4, 8],
      resi_connection: '3conv',
      upscale: 3,
    },
    inputs: [{ name: 'bird', image: 'set5/bird.png', left: 60, top: 70, width: 30, height: 26 }],
    spec: { depths: [4, 4], heads: [4, 4], splitSize: [4, 8], resiConnection: '3conv', scale: 3 },
    description: 'RGT x3 (64 dim, 2×4 blocks, 4 heads, window 4×8, mlp ×2, 3conv)',
  },
  {
    id: 'x2-cratio-no-bias',
    seed: 94,
    config: {
      ...small,
      depth: [2, 2],
      num_heads: [4, 2],
      split_size: [8, 8],
      resi_connection: '1conv',
      c_ratio: 0.25,
      qkv_bias: false,
      upscale: 2,
    },
    inputs: [{ name: 'butterfly', image: 'set5/butterfly.png', left: 100, top: 90, width: 41, height: 35 }],
    spec: { heads: [4, 2], reducedDim: 16, qkvBias: false },
    description: 'RGT x2 (64 dim, 2×2 blocks, 4/2 heads, window 8×8, mlp ×2, 1conv)',
  },
  {
    id: 'x1',
    seed: 95,
    config: { ...small, depth: [2], num_heads: [2], split_size: [8, 16], resi_connection: '1conv', upscale: 1 },
    inputs: [{ name: 'barbara', image: 'set14/barbara.png', left: 300, top: 100, width: 70, height: 40 }],
    spec: { scale: 1, splitSize: [8, 16] },
    description: 'RGT x1 (64 dim, 1×2 blocks, 2 heads, window 8×16, mlp ×2, 1conv)',
  },
];

const run = referenceRun(
  'rgt_reference.py',
  'crisp-rgt-',
  CASES,
  () => 3,
  (c) => c.config.upscale as number,
  600_000,
);

describe('RGT conversion against PyTorch', () => {
  it.each(CASES.map((c) => [c.id, c] as const))(
    '%s',
    async (_id, c) => {
      const converted = await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'rgt', ...c.spec },
        description: c.description,
        scale: c.config.upscale as number,
        spread: 0.3,
      });
      const tiling = rgt.tiling(converted.spec as RgtSpec);
      expect([tiling.window, tiling.minSide]).toEqual([Math.max(...(c.config.split_size as number[])), 16]);
    },
    180_000,
  );

  it('pads inputs below 16 pixels (which the reference refuses), so 1×1 to 15×9 upscale to finite pixels', async () => {
    const { onnx } = await convertModelFile(run.refs.get('x2-cratio-no-bias')!.safetensors);
    for (const [w, h] of [
      [1, 1],
      [15, 9],
      [7, 20],
    ] as const) {
      const y = await runOnnx(onnx, new Float32Array(3 * w * h).fill(0.5), [1, 3, h, w]);
      expect(y.dims).toEqual([1, 3, 2 * h, 2 * w]);
      expect(y.data.every(Number.isFinite)).toBe(true);
    }
  }, 60_000);
});

describe('RGT through crisp models import', () => {
  it('names the architecture, its variant, scale and licence', async () => {
    const models = path.join(run.dir, 'cli-models');
    const file = path.join(run.dir, 'RGT_x4.pth');
    copyFileSync(run.refs.get('x4-released')!.pth, file);
    const a = await runCli(['models', 'import', file, '--dir', models, '--licence', 'Apache-2.0']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${file}: imported as RGT_x4 (x4, RGT x4 (180 dim, 8×6 blocks, 6 heads, window 8×32, mlp ×2, 1conv)) → ${path.join(models, 'custom', 'RGT_x4.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}RGT ×4, [\d.]+ M parameters, \d+\.\d MB, licence Apache-2\.0$/);
    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['RGT_x4', 'RGT', 4, 'Apache-2.0'],
    ]);
  }, 300_000);
});
