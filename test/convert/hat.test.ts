/**
 * HAT .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/hat_reference.py (written from the
 * paper and the public architecture, same keys and buffers as the released HAT-S / HAT / HAT-L checkpoints)
 * saves random-weight models and their outputs on crops of real photos; the converted graphs must reproduce
 * them at max abs diff ≤ 1e-4 (fp32, 0–1 pixels), including sizes that are not a multiple of the window.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSpec, tilingOf } from '../../engine/convert/architectures/registry.js';
import { detectArchitecture } from '../../engine/convert/architectures/detect.js';
import { ocaRelativePositionIndex } from '../../engine/convert/architectures/hat.js';
import type { StateDict } from '../../engine/convert/checkpoint/stateDict.js';
import { runCli } from '../helpers/runCli.js';
import { maxAbsDiff, runOnnx } from './support/onnxRun.js';
import { writeSafetensors } from './support/torchWriters.js';
import { expectMatchesPyTorch, referenceRun, type RefCase } from './support/transformerReference.js';

interface HatCase extends RefCase {
  expected: Record<string, unknown>;
}

/** HAT's published shape at a test size: window 16, overlap ratio 0.5, mlp ratio 2. */
const small = {
  embed_dim: 12,
  depths: [2, 2],
  num_heads: [2, 3],
  window_size: 16,
  compress_ratio: 3,
  squeeze_factor: 4,
  overlap_ratio: 0.5,
  mlp_ratio: 2,
  num_feat: 8,
};
/** 37×29 is not a multiple of 16 (padded to 48×32 inside the graph); 32×48 is. */
const odd = { name: 'odd', image: 'set5/bird.png', width: 37, height: 29, left: 90, top: 70 };
const even = { name: 'even', image: 'set14/zebra.png', width: 48, height: 32, left: 200, top: 150 };

const CASES: HatCase[] = [
  {
    id: 'hat-x2',
    seed: 11,
    config: { ...small, upscale: 2 },
    inputs: [odd, even],
    expected: { scale: 2, windowSize: 16, overlapWindow: 24, depths: [2, 2], numHeads: [2, 3], mlpRatio: 2 },
  },
  {
    id: 'hat-x4-window8',
    seed: 12,
    config: { ...small, depths: [3], num_heads: [4], window_size: 8, upscale: 4 },
    // 6×5 is smaller than one window (PyTorch still reflects 2 and 3 pixels).
    inputs: [
      { ...odd, width: 21, height: 19 },
      { ...odd, name: 'tiny', width: 6, height: 5 },
    ],
    expected: { scale: 4, windowSize: 8, overlapWindow: 12, cabChannels: 4, squeezeChannels: 3 },
  },
  {
    // 1× restoration, greyscale, no qkv biases and no residual convs (resi_connection 'identity').
    id: 'hat-x1-grey',
    seed: 13,
    config: { ...small, in_chans: 1, upscale: 1, qkv_bias: false, resi_connection: 'identity' },
    inputs: [odd],
    expected: { scale: 1, inChannels: 1, outChannels: 1, resiConnection: 'identity' },
  },
  {
    id: 'hat-x3-rgba',
    seed: 14,
    config: { ...small, depths: [2], num_heads: [2], window_size: 8, in_chans: 4, upscale: 3 },
    inputs: [{ ...odd, width: 22, height: 17 }],
    expected: { scale: 3, inChannels: 4, outChannels: 4 },
  },
  {
    // HAT-S's real widths (embed 144, 6 heads, CAB ÷24, 64 features in the tail), in one group of two blocks.
    id: 'hat-s-widths-x4',
    seed: 15,
    config: {
      embed_dim: 144,
      depths: [2],
      num_heads: [6],
      window_size: 16,
      compress_ratio: 24,
      squeeze_factor: 24,
      mlp_ratio: 2,
      num_feat: 64,
      upscale: 4,
    },
    inputs: [{ ...odd, width: 20, height: 18 }],
    expected: { variant: 'HAT', scale: 4, embedDim: 144, cabChannels: 6, squeezeChannels: 6 },
  },
];

const run = referenceRun(
  'hat_reference.py',
  'crisp-hat-',
  CASES,
  (c) => (c.config.in_chans as number | undefined) ?? 3,
  (c) => c.config.upscale as number,
  180_000,
);

describe('HAT relative position index for the overlapping windows', () => {
  it("wraps HAT's negative entries into the table, covering it without going past its end", () => {
    const idx = ocaRelativePositionIndex(16, 24);
    expect(idx).toHaveLength(256 * 576);
    expect(idx.reduce((a, b) => Math.min(a, b))).toBeGreaterThanOrEqual(0);
    expect(idx.reduce((a, b) => Math.max(a, b))).toBe(39 * 39 - 1);
    // Query (0,0) against key (0,0): (0 − 0 + 16 − 24 + 1)·39 + (−7) = −280 → 1521 − 280.
    expect(idx[0]).toBe(1521 - 280);
  });
});

/**
 * The keys and shapes detection reads, for a published configuration (zero weights: detection only).
 * HAT-S: embed 144, CAB 144/24; HAT: 180, 180/3; HAT-L: HAT with 12 groups. All: 6 blocks, 6 heads, window 16.
 */
function publishedShapes(embed: number, cab: number, groups: number, scale: number): StateDict {
  const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
  const d: StateDict = new Map([
    ['conv_first.weight', t([embed, 3, 3, 3])],
    ['conv_after_body.weight', t([embed, embed, 3, 3])],
    ['conv_before_upsample.0.weight', t([64, embed, 3, 3])],
    ['conv_last.weight', t([3, 64, 3, 3])],
    ['relative_position_index_SA', t([256, 256])],
    ['relative_position_index_OCA', t([256, 576])],
  ]);
  for (let u = 0; u < Math.log2(scale); u++) d.set(`upsample.${2 * u}.weight`, t([256, 64, 3, 3]));
  for (let i = 0; i < groups; i++) {
    const g = `layers.${i}.residual_group`;
    d.set(`${g}.overlap_attn.qkv.weight`, t([3 * embed, embed]));
    d.set(`${g}.overlap_attn.relative_position_bias_table`, t([39 * 39, 6]));
    for (let j = 0; j < 6; j++) {
      d.set(`${g}.blocks.${j}.norm1.weight`, t([embed]));
      d.set(`${g}.blocks.${j}.attn.relative_position_bias_table`, t([31 * 31, 6]));
      d.set(`${g}.blocks.${j}.mlp.fc1.weight`, t([2 * embed, embed]));
      d.set(`${g}.blocks.${j}.conv_block.cab.0.weight`, t([cab, embed, 3, 3]));
      d.set(`${g}.blocks.${j}.conv_block.cab.3.attention.1.weight`, t([6, embed, 1, 1]));
    }
  }
  return d;
}

describe('HAT variants are named from the published shapes', () => {
  // The tile planner's cost relative to SRVGGNetCompact: HAT-S measured 17× on a 256² tile (docs/models.md).
  it.each([
    ['HAT-S', 144, 6, 6, 4, 17],
    ['HAT', 180, 60, 6, 4, 29],
    ['HAT-L', 180, 60, 12, 2, 57],
  ] as const)('%s', (variant, embed, cab, groups, scale, cost) => {
    const spec = detectArchitecture(publishedShapes(embed, cab, groups, scale));
    expect(spec).toMatchObject({
      kind: 'hat',
      variant,
      scale,
      embedDim: embed,
      depths: new Array(groups).fill(6),
      numHeads: new Array(groups).fill(6),
      windowSize: 16,
      overlapWindow: 24,
      mlpRatio: 2,
    });
    expect(tilingOf(spec)).toEqual({ window: 16, minSide: 16, relativeCost: cost });
    expect(describeSpec(spec)).toMatch(new RegExp(`^${variant} x${scale} \\(embed ${embed}, depths 6(/6)+, `));
  });
});

describe('HAT conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'hat', ...c.expected },
        scale: c.config.upscale as number,
        peak: 0.1,
      });
    },
    90_000,
  );

  it('crisp models import prints the detected HAT parameters and installs a model equal to PyTorch', async () => {
    const ref = run.refs.get('hat-x2')!;
    const models = path.join(run.dir, 'models');
    const r = await runCli(['models', 'import', ref.pth, '--name', 'hat-test', '--dir', models]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const installed = path.join(models, 'custom', 'hat-test.onnx');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${ref.pth}: imported as hat-test (x2, HAT x2 (embed 12, depths 2/2, heads 2/3, window 16, overlap window 24, mlp 2, CAB 4/3)) → ${installed}`,
    );
    // The summary line: architecture, scale, parameters of the checkpoint, size of the converted graph, licence.
    expect(lines[1]).toMatch(/^ {2}HAT ×2, [\d.]+ k parameters, [\d.]+ MB, licence /);
    const inp = ref.inputs.get('odd')!;
    expect(maxAbsDiff((await runOnnx(installed, inp.data, inp.dims)).data, inp.expected)).toBeLessThanOrEqual(1e-4);
  }, 120_000);
});

describe('HAT checkpoints that cannot be converted', () => {
  it('a HAT checkpoint with an overlapping window that cannot be centred is refused by name, nothing installed', async () => {
    const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
    // Window 7 with overlap ratio 0.5 gives a 10-wide window: (10 − 7) / 2 is not a whole padding.
    const file = path.join(run.dir, 'odd-overlap.safetensors');
    writeFileSync(
      file,
      writeSafetensors(
        new Map([
          ['conv_first.weight', t([12, 3, 3, 3])],
          ['layers.0.residual_group.blocks.0.norm1.weight', t([12])],
          ['layers.0.residual_group.blocks.0.attn.relative_position_bias_table', t([169, 2])],
          ['layers.0.residual_group.blocks.0.conv_block.cab.0.weight', t([4, 12, 3, 3])],
          ['layers.0.residual_group.overlap_attn.qkv.weight', t([36, 12])],
          ['layers.0.residual_group.overlap_attn.relative_position_bias_table', t([256, 2])],
        ]),
      ),
    );
    const models = path.join(run.dir, 'refused');
    const r = await runCli(['models', 'import', file, '--dir', models]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(
      `${file}: not imported: HAT: an overlapping window of 10 around a 7 window cannot be centred (the model fails in PyTorch too)`,
    );
    expect(r.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(existsSync(path.join(models, 'custom', 'odd-overlap.onnx'))).toBe(false);
  }, 60_000);
});
