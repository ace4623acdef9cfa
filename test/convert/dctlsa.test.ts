/**
 * DCTLSA .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/dctlsa_reference.py (written from the
 * paper and the public architecture, same keys and buffers as the released checkpoint, checked equal to spandrel's
 * copy of upstream) saves random-weight models and their outputs on crops of real photos; the converted graphs
 * must reproduce them at max abs diff ≤ 1e-4 (fp32, 0–1 pixels), including sizes that are not a multiple of the
 * 16-pixel window (every BasicLayer reflect-pads and crops back).
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

interface DctlsaCase extends RefCase {
  expected: Record<string, unknown>;
  description: string;
}

/** 21×18 is not a multiple of the 16-pixel window: each BasicLayer reflect-pads it to 32×32 and crops back. */
const odd = { name: 'odd', image: 'set5/bird.png', width: 21, height: 18, left: 90, top: 70 };

// A small width (the released nf 55 has the same 546 tensors; the detection test below reads its shapes). The
// hundreds of small tensors (biases, BatchNorm statistics) are most of a golden, so one case: 2× RGB (the scale
// only changes the last conv's outputs and the shuffle).
const CASES: DctlsaCase[] = [
  {
    id: 'dctlsa-x2',
    seed: 52,
    wrapper: 'params_ema',
    config: { nf: 15, upscale: 2 },
    inputs: [odd],
    expected: { scale: 2, inChannels: 3, outChannels: 3, features: 15, mlpRatio: 2 },
    description: 'DCTLSA x2 (15 feat, 6 LSAB, 5 heads, window 16)',
  },
];

const run = referenceRun(
  'dctlsa_reference.py',
  'crisp-dctlsa-',
  CASES,
  (c) => (c.config.in_chans as number | undefined) ?? 3,
  (c) => c.config.upscale as number,
  300_000,
);

const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });

/** The keys and shapes detection reads for the released configuration, nf 55 at 4× (zero weights: detection only). */
function publishedShapes(nf = 55): StateDict {
  const d: StateDict = new Map([
    ['fea_conv.weight', t([nf, 3, 3, 3])],
    ['c.0.weight', t([nf, 6 * nf, 1, 1])],
    ['LR_conv.weight', t([nf, nf, 3, 3])],
    ['upsampler.0.weight', t([48, nf, 3, 3])],
  ]);
  for (let k = 1; k <= 5; k++) d.set(`c${k}.0.weight`, t([nf, (k + 1) * nf, 1, 1]));
  for (let m = 1; m <= 6; m++)
    for (let l = 0; l < 2; l++)
      for (let b = 0; b < 2; b++) {
        const p = `B${m}.body.${l}.transformer_body.0.blocks.${b}`;
        d.set(`${p}.attn.qkv.weight`, t([3 * nf, nf]));
        d.set(`${p}.attn.local.pointwise_prenorm_1.weight`, t([nf]));
        d.set(`${p}.mlp.fc1.weight`, t([2 * nf, nf]));
      }
  return d;
}

describe('DCTLSA detection', () => {
  it('names the released configuration from its shapes, with its tiling', () => {
    const spec = detectArchitecture(publishedShapes());
    expect(spec).toEqual({
      kind: 'dctlsa',
      inChannels: 3,
      outChannels: 3,
      scale: 4,
      features: 55,
      mlpRatio: 2,
    });
    // The planner's cost relative to SRVGGNetCompact: layer MACs scaled to the bench (dctlsa.ts dctlsaRelativeCost).
    expect(tilingOf(spec)).toEqual({ window: 16, minSide: 16, relativeCost: 2.9 });
    expect(describeSpec(spec)).toBe('DCTLSA x4 (released 55 feat, 6 LSAB, 5 heads, window 16)');
  });
});

describe('DCTLSA conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'dctlsa', ...c.expected },
        description: c.description,
        scale: c.config.upscale as number,
        peak: 1,
      });
    },
    120_000,
  );

  it('crisp models import prints the detected DCTLSA parameters and installs a model equal to PyTorch', async () => {
    await expectImportEqualsPyTorch(run.refs.get('dctlsa-x2')!, path.join(run.dir, 'models'), {
      name: 'dctlsa-test',
      licence: 'Apache-2.0',
      architecture: 'DCTLSA',
      scale: 2,
      description: 'DCTLSA x2 (15 feat, 6 LSAB, 5 heads, window 16)',
      input: 'odd',
    });
  }, 120_000);
});

describe('DCTLSA checkpoints that cannot be converted', () => {
  it('a width that does not split into five heads is refused in a sentence, nothing installed', async () => {
    const file = path.join(run.dir, 'twelve.safetensors');
    writeFileSync(file, writeSafetensors(publishedShapes(12)));
    await expectImportRefused(
      file,
      path.join(run.dir, 'refused'),
      'DCTLSA: 12 feature channels do not split into the 5 heads DCTLSA always has (checkpoints do not store the head count)',
    );
  }, 60_000);
});
