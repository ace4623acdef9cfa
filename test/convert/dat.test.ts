/**
 * DAT checkpoints (.pth and .safetensors) → ONNX in TypeScript, against PyTorch itself: the test-only
 * reference (support/dat_reference.py, written from the paper and the public definition, with the keys of
 * released DAT / DAT-S / DAT-2 / DAT-light files) builds random-weight models; Crisp converts both files
 * and its graph must reproduce PyTorch's output on a crop of a real photo whose size is not a multiple of
 * the window (so the in-attention padding and the shifted-window masks are exercised at a new size).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UnsupportedArchitectureError } from '../../engine/convert/architectures/architecture.js';
import { tilingOf } from '../../engine/convert/architectures/registry.js';
import { convertBytes, convertModelFile } from '../../engine/convert/convert.js';
import { datShifted, detectDat, type DatSpec } from '../../engine/convert/architectures/dat.js';
import { readSafetensors } from '../../engine/convert/checkpoint/safetensors.js';
import { runCli } from '../helpers/runCli.js';
import { runOnnx } from './support/onnxRun.js';
import { expectMatchesPyTorch, referenceRun } from './support/transformerReference.js';
import { writeSafetensors } from './support/torchWriters.js';

interface Case {
  id: string;
  name: string;
  config: {
    in_chans: 3 | 4;
    embed_dim: number;
    split_size: [number, number];
    depth: number[];
    num_heads: number[];
    expansion_factor: number;
    upscale: number;
    upsampler: 'pixelshuffle' | 'pixelshuffledirect';
    resi_connection: '1conv' | '3conv';
    img_size: number;
    qkv_bias?: boolean;
  };
  photo: string;
  /** Width × height of the crop. */
  size: [number, number];
  expect: Partial<DatSpec>;
  description: string;
}

/**
 * Small widths and depths with the released configurations' structure: windows 8×32 (DAT, DAT-2,
 * DAT-light) and 8×16 (DAT-S); four groups (so the shift pattern of odd and even groups is exercised),
 * or one for DAT-light. Sizes 20×36 and 27×19 are not multiples of the 32-pixel window side.
 */
const CASES: Case[] = [
  {
    id: 'dat-x4',
    name: 'DAT ×4 (8×32 windows, ffn ×4, pixelshuffle, 1conv)',
    config: {
      in_chans: 3,
      embed_dim: 32,
      split_size: [8, 32],
      depth: [3, 1, 1, 2],
      num_heads: [4, 4, 2, 4],
      expansion_factor: 4,
      upscale: 4,
      upsampler: 'pixelshuffle',
      resi_connection: '1conv',
      img_size: 64,
    },
    photo: 'set14/baboon.png',
    size: [36, 20],
    expect: { variant: 'DAT', scale: 4, embedDim: 32, depths: [3, 1, 1, 2], heads: [4, 4, 2, 4], splitSize: [8, 32] },
    description: 'DAT x4 (32 dim, 3+1+1+2 blocks, 4/4/2/4 heads, window 8×32, ffn ×4, pixelshuffle, 1conv)',
  },
  {
    id: 'dat2-x2',
    name: 'DAT-2 ×2 (ffn ×2)',
    config: {
      in_chans: 3,
      embed_dim: 40,
      split_size: [8, 32],
      depth: [2, 2, 2, 2],
      num_heads: [2, 2, 2, 2],
      expansion_factor: 2,
      upscale: 2,
      upsampler: 'pixelshuffle',
      resi_connection: '1conv',
      img_size: 64,
    },
    photo: 'set14/lenna.png',
    size: [19, 27],
    expect: { variant: 'DAT-2', scale: 2, expansion: 2 },
    description: 'DAT-2 x2 (40 dim, 4×2 blocks, 2 heads, window 8×32, ffn ×2, pixelshuffle, 1conv)',
  },
  {
    id: 'dats-x3',
    name: 'DAT-S ×3 (8×16 windows)',
    config: {
      in_chans: 3,
      embed_dim: 32,
      split_size: [8, 16],
      depth: [1, 1, 1, 1],
      num_heads: [2, 2, 2, 2],
      expansion_factor: 2,
      upscale: 3,
      upsampler: 'pixelshuffle',
      resi_connection: '1conv',
      img_size: 64,
    },
    photo: 'set14/comic.png',
    size: [21, 18],
    expect: { variant: 'DAT-S', scale: 3, splitSize: [8, 16] },
    description: 'DAT-S x3 (32 dim, 4×1 blocks, 2 heads, window 8×16, ffn ×2, pixelshuffle, 1conv)',
  },
  {
    id: 'datlight-x2-rgba',
    name: 'DAT-light ×2, RGBA (one-step upsampler, 3conv, no qkv bias)',
    config: {
      in_chans: 4,
      embed_dim: 32,
      split_size: [8, 32],
      depth: [3],
      num_heads: [4],
      expansion_factor: 2,
      upscale: 2,
      upsampler: 'pixelshuffledirect',
      resi_connection: '3conv',
      img_size: 64,
      qkv_bias: false,
    },
    photo: 'set14/flowers.png',
    size: [34, 17],
    expect: { variant: 'DAT-light', scale: 2, inChannels: 4, qkvBias: false, resiConnection: '3conv' },
    description:
      'DAT-light x2 (32 dim, 1×3 blocks, 4 heads, window 8×32, ffn ×2, pixelshuffledirect, 3conv, 4 channels)',
  },
  {
    id: 'dat-x1',
    name: 'DAT ×1 restoration',
    config: {
      in_chans: 3,
      embed_dim: 32,
      split_size: [8, 16],
      depth: [2, 1, 1, 1],
      num_heads: [2, 2, 2, 2],
      expansion_factor: 4,
      upscale: 1,
      upsampler: 'pixelshuffle',
      resi_connection: '1conv',
      img_size: 64,
    },
    photo: 'set14/foreman.png',
    size: [30, 25],
    expect: { scale: 1, upsampler: 'pixelshuffle' },
    description: 'DAT-S x1 (32 dim, 2+1+1+1 blocks, 2 heads, window 8×16, ffn ×4, pixelshuffle, 1conv)',
  },
  {
    id: 'datlight-released',
    name: 'DAT-light ×4 in its released configuration (60 dim, 18 blocks, 6 heads: 3 per branch)',
    config: {
      in_chans: 3,
      embed_dim: 60,
      split_size: [8, 32],
      depth: [18],
      num_heads: [6],
      expansion_factor: 2,
      upscale: 4,
      upsampler: 'pixelshuffledirect',
      resi_connection: '3conv',
      img_size: 64,
    },
    photo: 'set5/butterfly.png',
    size: [20, 18],
    expect: { variant: 'DAT-light', scale: 4, depths: [18], heads: [6] },
    description: 'DAT-light x4 (60 dim, 1×18 blocks, 6 heads, window 8×32, ffn ×2, pixelshuffledirect, 3conv)',
  },
];

const run = referenceRun(
  'dat_reference.py',
  'crisp-dat-',
  CASES.map((c) => ({
    id: c.id,
    seed: 11,
    config: c.config,
    inputs: [{ name: 'photo', image: c.photo, width: c.size[0], height: c.size[1], left: 40, top: 30 }],
  })),
  (r) => CASES.find((c) => c.id === r.id)!.config.in_chans,
  (r) => CASES.find((c) => c.id === r.id)!.config.upscale,
  300_000,
);

describe('DAT conversion against PyTorch (random weights, real photo crops)', () => {
  it.each(CASES)(
    '$name',
    async (c) => {
      const fromPth = await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'dat', ...c.expect },
        description: c.description,
        scale: c.config.upscale,
        inputs: ['photo'],
        spread: 0.5,
      });
      // The tile planner's figures; the released light models were benched at 1.6× and 1.4–1.6× the compact model.
      if (c.id === 'datlight-released')
        expect(tilingOf(fromPth.spec!)).toEqual({ window: 32, minSide: 1, relativeCost: 1.6 });
    },
    120_000,
  );
});

describe('DAT on inputs far smaller than its windows', () => {
  it('pads inside attention, so 1×1 to 7×3 inputs upscale to finite pixels of the right size', async () => {
    const ref = run.refs.get('datlight-x2-rgba')!;
    const converted = await convertModelFile(ref.pth);
    for (const [h, w] of [
      [1, 1],
      [7, 3],
    ] as const) {
      const data = new Float32Array(4 * h * w).map((_, i) => ((i * 37) % 101) / 100);
      const ours = await runOnnx(converted.onnx, data, [1, 4, h, w]);
      expect(ours.dims).toEqual([1, 4, 2 * h, 2 * w]);
      expect(ours.data.every(Number.isFinite)).toBe(true);
    }
  });
});

describe('crisp models import with a DAT checkpoint', () => {
  it('prints the detected architecture and parameters and installs a model that runs', async () => {
    const ref = run.refs.get('dats-x3')!;
    const models = path.join(run.dir, 'models');
    const r = await runCli(['models', 'import', ref.pth, '--name', 'dat-s', '--dir', models]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')[0]).toBe(
      `${ref.pth}: imported as dat-s (x3, ${CASES.find((c) => c.id === 'dats-x3')!.description}) → ${path.join(models, 'custom', 'dat-s.onnx')}`,
    );
  }, 120_000);
});

describe('DAT detection', () => {
  it('follows the published shift pattern (even groups: blocks 2, 6, …; odd groups: 0, 4, …)', () => {
    expect([0, 1, 2, 3, 4, 5, 6].filter((b) => datShifted(0, b))).toEqual([2, 6]);
    expect([0, 1, 2, 3, 4, 5, 6].filter((b) => datShifted(1, b))).toEqual([0, 4]);
  });

  it('names what is missing in a damaged DAT checkpoint, and refuses odd windows', async () => {
    const dict = readSafetensors(await readFile(run.refs.get('dat2-x2')!.safetensors));
    const noTemperature = new Map(dict);
    noTemperature.delete('layers.2.blocks.1.attn.temperature');
    expect(() => detectDat(noTemperature)).toThrow(
      new UnsupportedArchitectureError('not a DAT checkpoint: layers.2.blocks.1.attn.temperature is missing'),
    );
    const noNorm = new Map(dict);
    noNorm.delete('layers.0.blocks.1.ffn.sg.norm.weight');
    await expect(convertBytes(writeSafetensors(noNorm), 'safetensors')).rejects.toThrow(
      'not a DAT checkpoint: layers.0.blocks.1.ffn.sg.norm.weight is missing',
    );
    const noBuffers = new Map([...dict].filter(([k]) => !k.endsWith('.rpe_biases')));
    await expect(convertBytes(writeSafetensors(noBuffers), 'safetensors')).rejects.toThrow(
      'this DAT checkpoint lacks the rpe_biases buffers its window size is read from (was it saved without buffers?)',
    );
    const narrow = new Map(dict).set('layers.0.blocks.0.attn.attns.0.pos.pos_proj.weight', {
      shape: [0, 2],
      data: new Float32Array(0),
    });
    expect(() => detectDat(narrow)).toThrow('DAT with 40 channels has an empty position-bias MLP');
    const odd = new Map(dict);
    const rpe = dict.get('layers.0.blocks.0.attn.attns.0.rpe_biases')!;
    const data = Float32Array.from(rpe.data);
    data[data.length - 2] = 6; // last offset (6, 31): a 7×32 window
    odd.set('layers.0.blocks.0.attn.attns.0.rpe_biases', { shape: rpe.shape, data });
    expect(() => detectDat(odd)).toThrow('DAT window 7×32 is not supported (sides ≥ 2, one dividing the other)');
  });
});
