/**
 * CRAFT .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/craft_reference.py (written from the
 * paper and the public architecture, same keys and buffers as the released checkpoint, checked equal to spandrel's
 * copy of upstream) saves random-weight models and their outputs on crops of real photos; the converted graphs
 * must reproduce them at max abs diff ≤ 1e-4 (fp32, 0–1 pixels), on a side that is not a multiple of the 16-pixel
 * window and on one that is (CRAFT then pads a whole window more).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSpec, tilingOf } from '../../engine/convert/architectures/registry.js';
import { detectArchitecture } from '../../engine/convert/architectures/detect.js';
import type { StateDict } from '../../engine/convert/checkpoint/stateDict.js';
import { writeSafetensors } from './support/torchWriters.js';
import {
  expectImportEqualsPyTorch,
  expectImportRefused,
  expectMatchesPyTorch,
  referenceRun,
  type RefCase,
} from './support/transformerReference.js';

interface CraftCase extends RefCase {
  expected: Record<string, unknown>;
  description: string;
}

/** 21×18 is mirror-padded to 32×32; 16×16, already a multiple, to 32×32 as well (upstream adds a window). */
const odd = { name: 'odd', image: 'set5/bird.png', width: 21, height: 18, left: 90, top: 70 };
const even = { name: 'even', image: 'set14/zebra.png', width: 16, height: 16, left: 200, top: 150 };

// Released 4×16 windows at a small width (32: the narrowest whose position-bias MLP is not empty, as at the
// released 48) and depth; the released configuration's shapes are named by the detection test below.
const CASES: CraftCase[] = [
  {
    id: 'craft-x2',
    seed: 61,
    wrapper: 'params_ema',
    config: { embed_dim: 32, depths: [1, 1], num_heads: [4, 4], upscale: 2 },
    inputs: [odd, even],
    expected: {
      scale: 2,
      inChannels: 3,
      outChannels: 3,
      embedDim: 32,
      depths: [1, 1],
      heads: [4, 4],
      splitSize: [4, 16],
      mlpRatio: 2,
      qkvBias: true,
      resiConnection: '1conv',
    },
    description: 'CRAFT x2 (32 dim, 2 groups of 1/1, heads 4/4, window 4×16, mlp 2)',
  },
  {
    // 1× restoration, grey, two steps in one group, 2×8 windows, no qkv bias, no residual conv.
    id: 'craft-x1-grey',
    seed: 62,
    config: {
      in_chans: 1,
      embed_dim: 32,
      depths: [2],
      num_heads: [4],
      split_size_0: 2,
      split_size_1: 8,
      qkv_bias: false,
      resi_connection: 'identity',
      upscale: 1,
    },
    inputs: [{ ...odd, width: 19, height: 17 }],
    expected: { scale: 1, inChannels: 1, outChannels: 1, depths: [2], splitSize: [2, 8], qkvBias: false },
    description: 'CRAFT x1 (32 dim, 1 group of 2, heads 4, window 2×8, mlp 2, no qkv bias, no residual conv, grey)',
  },
];

const run = referenceRun(
  'craft_reference.py',
  'crisp-craft-',
  CASES,
  (c) => (c.config.in_chans as number | undefined) ?? 3,
  (c) => c.config.upscale as number,
  300_000,
);

const t = (shape: number[], data?: number[]) => ({
  shape,
  data: data ? Float32Array.from(data) : new Float32Array(shape.reduce((a, b) => a * b, 1)),
});

/** The rows of every offset (dh, dw) of an hs×ws window (the biases_h buffer). */
function offsets(hs: number, ws: number): number[] {
  const rows: number[] = [];
  for (let dh = 1 - hs; dh < hs; dh++) for (let dw = 1 - ws; dw < ws; dw++) rows.push(dh, dw);
  return rows;
}

/** The keys and shapes detection reads for the released 4x-craft-pretrain (zero weights: detection only). */
function publishedShapes(split: [number, number] = [4, 16]): StateDict {
  const dim = 48;
  const d: StateDict = new Map([
    ['conv_first.weight', t([dim, 3, 3, 3])],
    ['conv_after_body.weight', t([dim, dim, 3, 3])],
    ['upsample.0.weight', t([48, dim, 3, 3])],
    ['biases_h', t([(2 * split[0] - 1) * (2 * split[1] - 1), 2], offsets(split[0], split[1]))],
  ]);
  for (let i = 0; i < 4; i++)
    for (let s = 0; s < 2; s++) {
      const g = `layers.${i}.residual_group`;
      d.set(`${g}.hf_blocks.${s}.attn.temperature`, t([6, 1, 1]));
      d.set(`${g}.srwa_blocks.${2 * s}.qkv.bias`, t([3 * dim]));
      d.set(`${g}.srwa_blocks.${2 * s}.mlp.fc1.weight`, t([2 * dim, dim]));
    }
  return d;
}

describe('CRAFT detection', () => {
  it('names the released configuration from its shapes, with its tiling', () => {
    const spec = detectArchitecture(publishedShapes());
    expect(spec).toEqual({
      kind: 'craft',
      inChannels: 3,
      outChannels: 3,
      scale: 4,
      embedDim: 48,
      depths: [2, 2, 2, 2],
      heads: [6, 6, 6, 6],
      splitSize: [4, 16],
      mlpRatio: 2,
      qkvBias: true,
      resiConnection: '1conv',
    });
    // The planner's cost relative to SRVGGNetCompact: layer MACs scaled to the bench (craft.ts craftRelativeCost).
    expect(tilingOf(spec)).toEqual({ window: 16, minSide: 16, relativeCost: 4.1 });
    expect(describeSpec(spec)).toBe(
      'CRAFT x4 (released 48 dim, 4 groups of 2/2/2/2, heads 6/6/6/6, window 4×16, mlp 2)',
    );
  });
});

describe('CRAFT conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'craft', ...c.expected },
        description: c.description,
        scale: c.config.upscale as number,
        peak: 0.5,
      });
    },
    120_000,
  );

  it('crisp models import prints the detected CRAFT parameters and installs a model equal to PyTorch', async () => {
    await expectImportEqualsPyTorch(run.refs.get('craft-x2')!, path.join(run.dir, 'models'), {
      name: 'craft-test',
      licence: 'MIT',
      architecture: 'CRAFT',
      scale: 2,
      description: 'CRAFT x2 (32 dim, 2 groups of 1/1, heads 4/4, window 4×16, mlp 2)',
      input: 'odd',
    });
  }, 120_000);
});

describe('CRAFT checkpoints that cannot be converted', () => {
  it('windows that do not tile its 16-pixel padding are refused in a sentence, nothing installed', async () => {
    const file = path.join(run.dir, 'window6.safetensors');
    writeFileSync(file, writeSafetensors(publishedShapes([6, 12])));
    await expectImportRefused(
      file,
      path.join(run.dir, 'refused'),
      'CRAFT with 6×12 windows is not supported: they must tile its 16-pixel padding (sides dividing 16)',
    );
  }, 60_000);
});
