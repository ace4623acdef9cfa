/**
 * ATD .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/atd_reference.py (written from the paper
 * and the public architecture, same keys and buffers as the released ATD / ATD-light checkpoints, its category
 * sort made stable: see there) saves random-weight models and their outputs on crops of real photos; the
 * converted graphs must reproduce them at max abs diff ≤ 1e-4 (fp32, 0–1 pixels), including sizes that are not a
 * multiple of the window and token counts that are not a multiple of the category size (the last group padded).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSpec, tilingOf } from '../../engine/convert/architectures/registry.js';
import { detectArchitecture } from '../../engine/convert/architectures/detect.js';
import type { StateDict } from '../../engine/convert/checkpoint/stateDict.js';
import {
  expectImportEqualsPyTorch,
  expectMatchesPyTorch,
  referenceRun,
  type RefCase,
} from './support/transformerReference.js';

interface AtdCase extends RefCase {
  expected: Record<string, unknown>;
}

const small = {
  embed_dim: 24,
  depths: [2, 3],
  num_heads: [2, 3],
  window_size: 8,
  num_tokens: 16,
  reducted_dim: 4,
  convffn_kernel_size: 5,
  mlp_ratio: 2,
  num_feat: 8,
};
/**
 * 37×19 pads to 40×24 (window 8): 960 tokens, so groups of 256 leave the last one 64 short (filled with the
 * sorted sequence's end); 32×24 is a window multiple (768 tokens, 3 full groups); 6×5 pads to 8×8, 64 tokens, one
 * group of all of them.
 */
const wide = { name: 'wide', image: 'set5/bird.png', width: 37, height: 19, left: 90, top: 70 };
const even = { name: 'even', image: 'set14/zebra.png', width: 32, height: 24, left: 200, top: 150 };
const tiny = { name: 'tiny', image: 'set5/bird.png', width: 6, height: 5, left: 120, top: 100 };

const CASES: AtdCase[] = [
  {
    // One group of the released ATD's shape: embed 210, 6 heads, window 16, 128 dictionary entries reduced to 20,
    // 5×5 ConvFFN of ratio 2, category 256, pixel-shuffle 4×; params_ema as the releases.
    id: 'atd-released-x4',
    seed: 51,
    wrapper: 'params_ema',
    config: {
      embed_dim: 210,
      depths: [2],
      num_heads: [6],
      window_size: 16,
      category_size: 256,
      num_tokens: 128,
      reducted_dim: 20,
      convffn_kernel_size: 5,
      mlp_ratio: 2,
      upsampler: 'pixelshuffle',
      upscale: 4,
    },
    inputs: [{ ...wide, name: 'odd', width: 20, height: 18 }],
    expected: {
      variant: 'ATD',
      upsampler: 'pixelshuffle',
      scale: 4,
      embedDim: 210,
      depths: [2],
      numHeads: [6],
      windowSize: 16,
      categorySize: 256,
      numTokens: 128,
      reducedDim: 20,
      convffnKernel: 5,
      mlpRatio: 2,
    },
  },
  {
    // ATD-light's widths (embed 48, 4 heads, 64 entries of 8, 7×7 ConvFFN of ratio 1, one-step tail, so category
    // 128) in one group; window 8 so that 960 tokens leave the last group of 128 short.
    id: 'atd-light-x3',
    seed: 52,
    config: {
      embed_dim: 48,
      depths: [2],
      num_heads: [4],
      window_size: 8,
      category_size: 128,
      num_tokens: 64,
      reducted_dim: 8,
      convffn_kernel_size: 7,
      mlp_ratio: 1,
      upsampler: 'pixelshuffledirect',
      upscale: 3,
    },
    inputs: [wide],
    expected: { upsampler: 'pixelshuffledirect', scale: 3, categorySize: 128, convffnKernel: 7, mlpRatio: 1 },
  },
  {
    id: 'atd-x2',
    seed: 53,
    config: { ...small, upsampler: 'pixelshuffle', upscale: 2 },
    inputs: [wide, even, tiny],
    expected: { scale: 2, depths: [2, 3], numHeads: [2, 3], windowSize: 8, categorySize: 256, numTokens: 16 },
  },
  {
    // 1× restoration, greyscale, without the mean shift (`no_norm`), qkv biases or 1conv residuals.
    id: 'atd-x1-grey',
    seed: 54,
    config: {
      ...small,
      embed_dim: 16,
      depths: [2],
      num_heads: [2],
      in_chans: 1,
      upscale: 1,
      qkv_bias: false,
      resi_connection: '3conv',
      norm: false,
    },
    inputs: [{ ...wide, name: 'odd', width: 29, height: 27 }],
    expected: { upsampler: 'none', scale: 1, inChannels: 1, qkvBias: false, resiConnection: '3conv', norm: false },
  },
  {
    // The real-world tail (nearest + conv, 4× only), RGBA.
    id: 'atd-x4-realworld-rgba',
    seed: 55,
    config: {
      ...small,
      embed_dim: 16,
      depths: [2],
      num_heads: [2],
      in_chans: 4,
      upsampler: 'nearest+conv',
      upscale: 4,
    },
    inputs: [{ ...wide, name: 'odd', width: 22, height: 17 }],
    expected: { upsampler: 'nearest+conv', scale: 4, inChannels: 4, outChannels: 4 },
  },
];

const run = referenceRun(
  'atd_reference.py',
  'crisp-atd-',
  CASES,
  (c) => (c.config.in_chans as number | undefined) ?? 3,
  (c) => c.config.upscale as number,
  300_000,
);

/** The keys and shapes detection reads for a published configuration (zero weights: detection only). */
function publishedShapes(light: boolean): StateDict {
  const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
  const [embed, groups, heads, tokens, reduced, kernel, hidden] = light
    ? [48, 4, 4, 64, 8, 7, 48]
    : [210, 6, 6, 128, 20, 5, 420];
  const d: StateDict = new Map([
    ['conv_first.weight', t([embed, 3, 3, 3])],
    ['conv_after_body.weight', t([embed, embed, 3, 3])],
    ['relative_position_index_SA', t([256, 256])],
  ]);
  if (light) d.set('upsample.0.weight', t([48, embed, 3, 3]));
  else {
    d.set('conv_before_upsample.0.weight', t([64, embed, 3, 3]));
    d.set('upsample.0.weight', t([256, 64, 3, 3]));
    d.set('upsample.2.weight', t([256, 64, 3, 3]));
    d.set('conv_last.weight', t([3, 64, 3, 3]));
  }
  for (let i = 0; i < groups; i++) {
    d.set(`layers.${i}.residual_group.td`, t([tokens, embed]));
    d.set(`layers.${i}.conv.weight`, t([embed, embed, 3, 3]));
    for (let j = 0; j < 6; j++) {
      const p = `layers.${i}.residual_group.layers.${j}`;
      d.set(`${p}.norm1.weight`, t([embed]));
      d.set(`${p}.wqkv.weight`, t([3 * embed, embed]));
      d.set(`${p}.wqkv.bias`, t([3 * embed]));
      d.set(`${p}.attn_win.relative_position_bias_table`, t([31 * 31, heads]));
      d.set(`${p}.attn_atd.scale`, t([tokens]));
      d.set(`${p}.attn_atd.wq.weight`, t([reduced, embed]));
      d.set(`${p}.convffn.fc1.weight`, t([hidden, embed]));
      d.set(`${p}.convffn.dwconv.depthwise_conv.0.weight`, t([hidden, 1, kernel, kernel]));
    }
  }
  return d;
}

describe('ATD variants are named from the published shapes', () => {
  // The tile planner's cost relative to SRVGGNetCompact (atd.ts atdRelativeCost: layer MACs plus a per-layer term
  // fitted to ATD-light's bench run, 6.6×).
  it.each([
    [
      false,
      'ATD',
      4,
      'pixelshuffle',
      37.6,
      'ATD x4 (embed 210, depths 6/6/6/6/6/6, heads 6/6/6/6/6/6, window 16, 128 tokens of 20, category 256, mlp 2, pixelshuffle, 1conv)',
    ],
    [
      true,
      'ATD-light',
      4,
      'pixelshuffledirect',
      6.5,
      'ATD-light x4 (embed 48, depths 6/6/6/6, heads 4/4/4/4, window 16, 64 tokens of 8, category 128, mlp 1, pixelshuffledirect, 1conv)',
    ],
  ] as const)('light %s: %s', (light, variant, scale, upsampler, cost, description) => {
    const spec = detectArchitecture(publishedShapes(light));
    expect(spec).toMatchObject({ kind: 'atd', variant, scale, upsampler, windowSize: 16, norm: true, qkvBias: true });
    expect(tilingOf(spec)).toEqual({ window: 16, minSide: 16, relativeCost: cost });
    expect(describeSpec(spec)).toBe(description);
  });
});

describe('ATD conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'atd', ...c.expected },
        scale: c.config.upscale as number,
        peak: 0.1,
      });
    },
    120_000,
  );

  it('crisp models import prints the detected ATD parameters and installs a model equal to PyTorch', async () => {
    await expectImportEqualsPyTorch(run.refs.get('atd-x2')!, path.join(run.dir, 'models'), {
      name: 'atd-test',
      licence: 'Apache-2.0',
      architecture: 'ATD',
      scale: 2,
      description:
        'ATD x2 (embed 24, depths 2/3, heads 2/3, window 8, 16 tokens of 4, category 256, mlp 2, pixelshuffle, 1conv)',
      input: 'wide',
    });
  }, 120_000);
});
