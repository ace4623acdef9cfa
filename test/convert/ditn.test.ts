/**
 * DITN .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/ditn_reference.py (written from the
 * paper and the public DITN_Real definition, same keys as the released checkpoints) saves random-weight models and
 * their outputs on crops of real photos; the converted graphs must reproduce them at max abs diff ≤ 1e-4 (fp32,
 * 0–1 pixels), including sizes that are not a multiple of the 8-pixel patch.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSpec, tilingOf } from '../../engine/convert/architectures/registry.js';
import {
  expectImportEqualsPyTorch,
  expectMatchesPyTorch,
  referenceRun,
  type RefCase,
} from './support/transformerReference.js';

interface DitnCase extends RefCase {
  expected: Record<string, unknown>;
}

/** 37×29 pads to 40×32 (20 patches); 32×24 is a patch multiple; 6×5 is smaller than one patch. */
const odd = { name: 'odd', image: 'set14/baboon.png', width: 37, height: 29, left: 120, top: 40 };
const even = { name: 'even', image: 'set5/butterfly.png', width: 32, height: 24, left: 100, top: 90 };

const CASES: DitnCase[] = [
  {
    // The released DITN_Real configuration: 60 dim, one UFONE of 4 ITL + 4 SAL, FFN ×2 without biases, 4×.
    id: 'ditn-released-x4',
    seed: 71,
    wrapper: 'params_ema',
    config: {
      dim: 60,
      ITL_blocks: 4,
      SAL_blocks: 4,
      UFONE_blocks: 1,
      ffn_expansion_factor: 2,
      bias: false,
      upscale: 4,
    },
    inputs: [odd, even],
    expected: { scale: 4, dim: 60, ufoneBlocks: 1, itlBlocks: 4, salBlocks: 4, ffnExpansion: 2, bias: false },
  },
  {
    id: 'ditn-x2-bias',
    seed: 72,
    config: {
      dim: 16,
      ITL_blocks: 2,
      SAL_blocks: 1,
      UFONE_blocks: 2,
      ffn_expansion_factor: 1.5,
      bias: true,
      upscale: 2,
    },
    inputs: [
      { ...odd, name: 'odd', width: 21, height: 19 },
      { ...odd, name: 'tiny', width: 6, height: 5 },
    ],
    expected: { scale: 2, dim: 16, ufoneBlocks: 2, itlBlocks: 2, salBlocks: 1, ffnExpansion: 1.5, bias: true },
  },
  {
    // 1× (restoration), one UFONE of one ITL and two SALs.
    id: 'ditn-x1',
    seed: 73,
    config: { dim: 12, ITL_blocks: 1, SAL_blocks: 2, UFONE_blocks: 1, upscale: 1 },
    inputs: [{ ...odd, width: 27, height: 22 }],
    expected: { scale: 1, inChannels: 3, outChannels: 3, itlBlocks: 1, salBlocks: 2 },
  },
];

const run = referenceRun(
  'ditn_reference.py',
  'crisp-ditn-',
  CASES,
  () => 3,
  (c) => c.config.upscale as number,
  300_000,
);

describe('DITN conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      const converted = await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'ditn', ...c.expected },
        scale: c.config.upscale as number,
        peak: 0.1,
      });
      // The tile planner: patch multiples, any side (the graph pads), cost from the layers (ditn.ts).
      expect(tilingOf(converted.spec!)).toMatchObject({ window: 8, minSide: 1 });
    },
    120_000,
  );

  it('the released configuration is described and costed for the tile planner', async () => {
    const converted = await expectMatchesPyTorch('ditn-released-x4', run.refs.get('ditn-released-x4')!, {
      spec: { kind: 'ditn' },
      scale: 4,
      inputs: ['even'],
    });
    expect(describeSpec(converted.spec!)).toBe('DITN x4 (60 dim, 1 UFONE of 4 ITL + 4 SAL, ffn 2)');
    expect(tilingOf(converted.spec!)).toEqual({ window: 8, minSide: 1, relativeCost: 1.2 });
  }, 120_000);

  it('crisp models import prints the detected DITN parameters and installs a model equal to PyTorch', async () => {
    await expectImportEqualsPyTorch(run.refs.get('ditn-x2-bias')!, path.join(run.dir, 'models'), {
      name: 'ditn-test',
      licence: 'Apache-2.0',
      architecture: 'DITN',
      scale: 2,
      description: 'DITN x2 (16 dim, 2 UFONE of 2 ITL + 1 SAL, ffn 1.5, bias)',
      input: 'odd',
    });
  }, 120_000);
});
