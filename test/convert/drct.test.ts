/**
 * DRCT .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/drct_reference.py (written from the
 * paper and the public architecture, same keys and buffers as the released DRCT / DRCT-L checkpoints) saves
 * random-weight models and their outputs on crops of real photos; the converted graphs must reproduce them at
 * max abs diff ≤ 1e-4 (fp32, 0–1 pixels), including sizes that are not a multiple of the window.
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

interface DrctCase extends RefCase {
  expected: Record<string, unknown>;
}

/** Small widths: blocks of 12, 16, 20, 24 and 28 channels get 3, 2, 1, 3 and 2 heads (3 − width mod 3). */
const small = { embed_dim: 12, gc: 4, num_heads: [3, 3], window_size: 8, img_size: 32, mlp_ratio: 2, num_feat: 8 };
const smallHeads = [3, 2, 1, 3, 2];
/** 37×29 is not a multiple of 8 (padded to 40×32 inside the graph); 32×24 is; 6×5 is smaller than one window. */
const odd = { name: 'odd', image: 'set5/bird.png', width: 37, height: 29, left: 90, top: 70 };
const even = { name: 'even', image: 'set14/zebra.png', width: 32, height: 24, left: 200, top: 150 };

const CASES: DrctCase[] = [
  {
    // One group of the released DRCT's shape: embed 180, growth 32, window 16, 6 heads (so 6/4/2/6/4 per block),
    // mlp 2, trained at 64² (attn_mask buffers of 16 windows), in the params_ema wrapper the releases use.
    id: 'drct-released-x4',
    seed: 41,
    wrapper: 'params_ema',
    config: {
      embed_dim: 180,
      gc: 32,
      num_heads: [6],
      window_size: 16,
      img_size: 64,
      mlp_ratio: 2,
      num_feat: 64,
      upscale: 4,
    },
    inputs: [{ ...odd, width: 20, height: 18 }],
    expected: {
      variant: 'DRCT',
      scale: 4,
      embedDim: 180,
      groups: 1,
      heads: [[6, 4, 2, 6, 4]],
      windowSize: 16,
      growth: 32,
      mlpRatio: 2,
      shifted: true,
    },
  },
  {
    id: 'drct-x2',
    seed: 42,
    config: { ...small, upscale: 2 },
    inputs: [odd, even, { ...odd, name: 'tiny', width: 6, height: 5 }],
    expected: { scale: 2, groups: 2, heads: [smallHeads, smallHeads], windowSize: 8, growth: 4, shifted: true },
  },
  {
    // 1× restoration, greyscale, no qkv biases, no residual conv, no patch-embed norm.
    id: 'drct-x1-grey',
    seed: 43,
    config: {
      ...small,
      num_heads: [3],
      in_chans: 1,
      upscale: 1,
      qkv_bias: false,
      resi_connection: 'identity',
      patch_norm: false,
    },
    inputs: [odd],
    expected: { scale: 1, inChannels: 1, outChannels: 1, qkvBias: false, resiConnection: 'identity' },
  },
  {
    // Trained at the window's own size: DRCT then never shifts, and the file has no attn_mask buffers.
    id: 'drct-x3-rgba-noshift',
    seed: 44,
    config: { ...small, num_heads: [3], in_chans: 4, img_size: 8, upscale: 3 },
    inputs: [{ ...odd, width: 22, height: 17 }],
    expected: { scale: 3, inChannels: 4, outChannels: 4, shifted: false },
  },
];

const run = referenceRun(
  'drct_reference.py',
  'crisp-drct-',
  CASES,
  (c) => (c.config.in_chans as number | undefined) ?? 3,
  (c) => c.config.upscale as number,
  300_000,
);

const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });

/** The keys and shapes detection reads for a published configuration (zero weights: detection only). */
function publishedShapes(groups: number, scale: number): StateDict {
  const d: StateDict = new Map([
    ['conv_first.weight', t([180, 3, 3, 3])],
    ['conv_after_body.weight', t([180, 180, 3, 3])],
    ['conv_before_upsample.0.weight', t([64, 180, 3, 3])],
    ['conv_last.weight', t([3, 64, 3, 3])],
  ]);
  for (let u = 0; u < Math.log2(scale); u++) d.set(`upsample.${2 * u}.weight`, t([256, 64, 3, 3]));
  for (let i = 0; i < groups; i++) {
    [6, 4, 2, 6, 4].forEach((heads, k) => {
      const width = 180 + 32 * k;
      const b = `layers.${i}.swin${k + 1}`;
      d.set(`${b}.norm1.weight`, t([width]));
      d.set(`${b}.attn.relative_position_bias_table`, t([31 * 31, heads]));
      d.set(`${b}.attn.relative_position_index`, t([256, 256]));
      d.set(`${b}.attn.qkv.bias`, t([3 * width]));
      d.set(`${b}.mlp.fc1.weight`, t([k < 3 ? 2 * width : width, width]));
      if (k % 2 === 1) d.set(`${b}.attn_mask`, t([16, 256, 256]));
      d.set(`layers.${i}.adjust${k + 1}.weight`, t([k < 4 ? 32 : 180, width, 1, 1]));
    });
  }
  return d;
}

describe('DRCT variants are named from the published shapes', () => {
  // The tile planner's cost relative to SRVGGNetCompact, from the layer count (drct.ts drctRelativeCost).
  it.each([
    ['DRCT', 6, 4, 21],
    ['DRCT-L', 12, 2, 40],
  ] as const)('%s', (variant, groups, scale, cost) => {
    const spec = detectArchitecture(publishedShapes(groups, scale));
    expect(spec).toMatchObject({
      kind: 'drct',
      variant,
      scale,
      embedDim: 180,
      groups,
      heads: new Array(groups).fill([6, 4, 2, 6, 4]),
      windowSize: 16,
      growth: 32,
      mlpRatio: 2,
      shifted: true,
      qkvBias: true,
      resiConnection: '1conv',
    });
    expect(tilingOf(spec)).toEqual({ window: 16, minSide: 16, relativeCost: cost });
    expect(describeSpec(spec)).toBe(
      `${variant} x${scale} (embed 180, ${groups} groups, heads ${new Array(groups).fill(6).join('/')}, window 16, growth 32, mlp 2)`,
    );
  });
});

describe('DRCT conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'drct', ...c.expected },
        scale: c.config.upscale as number,
        peak: 0.1,
      });
    },
    120_000,
  );

  it('crisp models import prints the detected DRCT parameters and installs a model equal to PyTorch', async () => {
    await expectImportEqualsPyTorch(run.refs.get('drct-x2')!, path.join(run.dir, 'models'), {
      name: 'drct-test',
      licence: 'MIT',
      architecture: 'DRCT',
      scale: 2,
      description: 'DRCT x2 (embed 12, 2 groups, heads 3/3, window 8, growth 4, mlp 2)',
      input: 'odd',
    });
  }, 120_000);
});

describe('DRCT checkpoints that cannot be converted', () => {
  it('a DRCT without a reconstruction tail is refused by name, nothing installed', async () => {
    const dict = publishedShapes(1, 1);
    for (const k of ['conv_before_upsample.0.weight', 'conv_last.weight']) dict.delete(k);
    const file = path.join(run.dir, 'no-tail.safetensors');
    writeFileSync(file, writeSafetensors(dict));
    await expectImportRefused(
      file,
      path.join(run.dir, 'refused'),
      'this DRCT checkpoint has no reconstruction tail (conv_last): DRCT without an upsampler returns its input unchanged, so there is nothing to convert',
    );
  }, 60_000);
});
