/**
 * FDAT checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/fdat_reference.py builds random-weight
 * models with the released key layout (uint8 `upsampler.MetaUpsample` included) — FDAT-medium at its released size
 * (2x_DF2K_FDAT_M: 120 dim, 4 groups × 6 blocks, 4 heads, window 8, transpose+conv), FDAT-tiny's widths with the
 * pixelshuffle tail, and small ones for every other upsampler, 1× and the unshuffled 2× — on real photo crops
 * whose sides are not multiples of the 8-pixel window.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fdat, type FdatSpec } from '../../engine/convert/architectures/fdat.js';
import { readSafetensors } from '../../engine/convert/checkpoint/safetensors.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { writeSafetensors, type TestStateDict } from './support/torchWriters.js';
import { expectMatchesPyTorch, referenceRun, type RefCase } from './support/transformerReference.js';

interface Case extends RefCase {
  spec: Partial<FdatSpec>;
  description: string;
}

const small = {
  embed_dim: 32,
  num_groups: 1,
  depth_per_group: 1,
  num_heads: 2,
  window_size: 8,
  ffn_expansion_ratio: 2.0,
  aim_reduction_ratio: 8,
  mid_dim: 24,
};

const CASES: Case[] = [
  {
    id: 'x2-medium-released',
    seed: 81,
    wrapper: 'params_ema',
    config: {
      scale: 2,
      embed_dim: 120,
      num_groups: 4,
      depth_per_group: 3,
      num_heads: 4,
      window_size: 8,
      ffn_expansion_ratio: 2.0,
      aim_reduction_ratio: 8,
      mid_dim: 64,
      upsampler_type: 'transpose+conv',
    },
    inputs: [{ name: 'baboon', image: 'set14/baboon.png', left: 120, top: 40, width: 21, height: 19 }],
    spec: { variant: 'medium', embedDim: 120, numGroups: 4, blocksPerGroup: 6, heads: 4, window: 8, ffnHidden: 240 },
    description: 'FDAT-medium x2 (120 dim, 4×6 blocks, window 8, transpose+conv)',
  },
  {
    id: 'x4-tiny-pixelshuffle',
    seed: 82,
    wrapper: 'params',
    config: {
      scale: 4,
      embed_dim: 96,
      num_groups: 2,
      depth_per_group: 2,
      num_heads: 3,
      window_size: 8,
      ffn_expansion_ratio: 1.5,
      aim_reduction_ratio: 8,
      mid_dim: 64,
      upsampler_type: 'pixelshuffle',
    },
    inputs: [{ name: 'lenna', image: 'set14/lenna.png', left: 200, top: 210, width: 20, height: 18 }],
    spec: { variant: 'tiny', heads: 3, ffnHidden: 144, upsampler: 'pixelshuffle', scale: 4 },
    description: 'FDAT-tiny x4 (96 dim, 2×4 blocks, window 8, pixelshuffle)',
  },
  {
    id: 'x3-transpose',
    seed: 83,
    config: { ...small, scale: 3, upsampler_type: 'transpose+conv' },
    inputs: [{ name: 'bird', image: 'set5/bird.png', left: 60, top: 70, width: 30, height: 26 }],
    spec: { upsampler: 'transpose+conv', scale: 3 },
    description: 'FDAT x3 (32 dim, 1×2 blocks, window 8, transpose+conv)',
  },
  {
    id: 'x4-transpose',
    seed: 84,
    config: { ...small, scale: 4, upsampler_type: 'transpose+conv' },
    inputs: [{ name: 'flowers', image: 'set14/flowers.png', left: 150, top: 150, width: 19, height: 17 }],
    spec: { upsampler: 'transpose+conv', scale: 4 },
    description: 'FDAT x4 (32 dim, 1×2 blocks, window 8, transpose+conv)',
  },
  {
    id: 'x2-dysample',
    seed: 85,
    config: { ...small, scale: 2, upsampler_type: 'dysample' },
    inputs: [{ name: 'butterfly', image: 'set5/butterfly.png', left: 100, top: 90, width: 37, height: 29 }],
    spec: { upsampler: 'dysample', scale: 2 },
    description: 'FDAT x2 (32 dim, 1×2 blocks, window 8, dysample)',
  },
  {
    id: 'x2-nearest-conv',
    seed: 86,
    config: { ...small, scale: 2, upsampler_type: 'nearest+conv', num_groups: 2 },
    inputs: [{ name: 'comic', image: 'set14/comic.png', left: 30, top: 40, width: 27, height: 35 }],
    spec: { upsampler: 'nearest+conv', numGroups: 2 },
    description: 'FDAT x2 (32 dim, 2×2 blocks, window 8, nearest+conv)',
  },
  {
    id: 'x3-pa-up',
    seed: 87,
    config: { ...small, scale: 3, upsampler_type: 'pa_up' },
    inputs: [{ name: 'head', image: 'set5/head.png', left: 100, top: 100, width: 22, height: 21 }],
    spec: { upsampler: 'pa_up', scale: 3 },
    description: 'FDAT x3 (32 dim, 1×2 blocks, window 8, pa_up)',
  },
  {
    id: 'x4-psdirect-window6',
    seed: 88,
    config: { ...small, scale: 4, upsampler_type: 'pixelshuffledirect', window_size: 6, depth_per_group: 2 },
    inputs: [{ name: 'foreman', image: 'set14/foreman.png', left: 40, top: 40, width: 20, height: 15 }],
    spec: { upsampler: 'pixelshuffledirect', window: 6, blocksPerGroup: 4 },
    description: 'FDAT x4 (32 dim, 1×4 blocks, window 6, pixelshuffledirect)',
  },
  {
    id: 'x1-conv',
    seed: 89,
    config: { ...small, scale: 1, upsampler_type: 'transpose+conv' },
    inputs: [{ name: 'baby', image: 'set5/baby.png', left: 200, top: 200, width: 33, height: 27 }],
    spec: { upsampler: 'conv', scale: 1, upscale: 1 },
    description: 'FDAT x1 (32 dim, 1×2 blocks, window 8, conv)',
  },
  {
    id: 'x2-unshuffle',
    seed: 90,
    config: { ...small, scale: 2, upsampler_type: 'pixelshuffledirect', unshuffle_mod: true },
    inputs: [{ name: 'barbara', image: 'set14/barbara.png', left: 300, top: 100, width: 37, height: 29 }],
    spec: { upsampler: 'pixelshuffledirect', scale: 2, upscale: 4, unshuffle: 2 },
    description: 'FDAT x2 (32 dim, 1×2 blocks, window 8, pixelshuffledirect, unshuffle 2)',
  },
];

const run = referenceRun(
  'fdat_reference.py',
  'crisp-fdat-',
  CASES,
  () => 3,
  (c) => c.config.scale as number,
  300_000,
);

describe('FDAT conversion against PyTorch', () => {
  it.each(CASES.map((c) => [c.id, c] as const))(
    '%s',
    async (_id, c) => {
      const converted = await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'fdat', ...c.spec },
        description: c.description,
        scale: c.config.scale as number,
        spread: 0.3,
      });
      expect(fdat.tiling(converted.spec as FdatSpec).window).toBe(c.config.window_size);
    },
    120_000,
  );
});

describe('FDAT through crisp models import', () => {
  it('names the architecture, its variant, scale and licence', async () => {
    const models = path.join(run.dir, 'cli-models');
    const released = path.join(run.dir, '2x_DF2K_FDAT_M_500k.safetensors');
    copyFileSync(run.refs.get('x2-medium-released')!.safetensors, released);
    const a = await runCli(['models', 'import', released, '--dir', models, '--licence', 'CC-BY-4.0']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${released}: imported as 2x_DF2K_FDAT_M_500k (x2, FDAT-medium x2 (120 dim, 4×6 blocks, window 8, transpose+conv)) → ${path.join(models, 'custom', '2x_DF2K_FDAT_M_500k.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}FDAT ×2, [\d.]+ M parameters, \d+\.\d MB, licence CC-BY-4\.0$/);
    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['2x_DF2K_FDAT_M_500k', 'FDAT', 2, 'CC-BY-4.0'],
    ]);
  }, 180_000);
});

describe('FDAT checkpoints Crisp cannot convert', () => {
  /** The x2-dysample checkpoint with its MetaUpsample record changed (or removed). */
  function altered(meta: number[] | null): Buffer {
    const dict: TestStateDict = new Map(readSafetensors(readFileSync(run.refs.get('x2-dysample')!.safetensors)));
    if (meta) dict.set('upsampler.MetaUpsample', { shape: [7], data: Float32Array.from(meta) });
    else dict.delete('upsampler.MetaUpsample');
    return writeSafetensors(dict);
  }

  it('refuses the LDA upsampler by name', async () => {
    await expect(convertBytes(altered([3, 6, 2, 32, 3, 24, 4]), 'safetensors')).rejects.toThrow(
      "FDAT's LDA upsampler (learned deformable attention with its own offset grid) is not supported",
    );
  });

  it('refuses a file without the upsampler record, an unknown upsampler number and a non-upscaling ×2', async () => {
    await expect(convertBytes(altered(null), 'safetensors')).rejects.toThrow(
      'this FDAT checkpoint lacks upsampler.MetaUpsample (the record of which upsampler it was trained with)',
    );
    await expect(convertBytes(altered([3, 9, 2, 32, 3, 24, 4]), 'safetensors')).rejects.toThrow(
      'FDAT upsampler number 9 is not one Crisp knows',
    );
    await expect(convertBytes(altered([3, 0, 2, 32, 3, 24, 4]), 'safetensors')).rejects.toThrow(
      "FDAT's conv upsampler does not upscale, but this file says ×2",
    );
  });
});
