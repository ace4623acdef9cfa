/**
 * OmniSR checkpoints → ONNX, against PyTorch (support/sr_reference.py, random weights, released key layout) on
 * real photo patches, including sizes that are not a multiple of the window (padded in the graph, cropped back).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tilingFromDoc } from '../../engine/convert/architecture.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { readOnnx } from '../../engine/convert/onnxReader.js';
import { runOnnx } from './support/onnxRun.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import {
  expectMatchesReference,
  hasTorch,
  photoPatch,
  runReferences,
  type RefCase,
  type RefResult,
} from './support/srReference.js';

const base = { in: 3, out: 3, feat: 16, blocks: 1, groups: 1, window: 8, pe: true, bias: true };
const CASES: RefCase[] = [
  {
    name: 'x4-window8',
    arch: 'omnisr',
    seed: 31,
    wrapper: 'params_ema',
    options: { ...base, scale: 4 },
    inputs: [
      { image: 'set14/baboon.png', left: 100, top: 100, w: 32, h: 32, c: 3 },
      { image: 'set14/lenna.png', left: 220, top: 230, w: 45, h: 37, c: 3 },
    ],
    expected: { kind: 'omnisr', scale: 4, numFeat: 16, blockNum: 1, resNum: 1, windowSize: 8, pe: true, bias: true },
  },
  {
    name: 'x2-two-groups-thop',
    arch: 'omnisr',
    seed: 32,
    wrapper: 'params',
    options: { ...base, scale: 2, groups: 2, blocks: 2, thop: true },
    inputs: [{ image: 'set5/butterfly.png', left: 70, top: 80, w: 35, h: 41, c: 3 }],
    expected: { kind: 'omnisr', scale: 2, blockNum: 2, resNum: 2 },
  },
  {
    // Without the position-bias table the window cannot be read from the weights; OmniSR's default 8 is assumed.
    name: 'x1-no-pe',
    arch: 'omnisr',
    seed: 33,
    wrapper: null,
    options: { ...base, scale: 1, pe: false },
    inputs: [{ image: 'set14/comic.png', left: 20, top: 30, w: 30, h: 19, c: 3 }],
    expected: { kind: 'omnisr', scale: 1, pe: false, windowSize: 8 },
  },
  {
    name: 'x3-rgba-window4',
    arch: 'omnisr',
    seed: 34,
    wrapper: 'state_dict',
    options: { ...base, in: 4, out: 4, scale: 3, window: 4 },
    inputs: [{ image: 'set14/barbara.png', left: 200, top: 300, w: 26, h: 22, c: 4 }],
    expected: { kind: 'omnisr', scale: 3, windowSize: 4, inChannels: 4, outChannels: 4 },
  },
];

let root: string;
let refs: Map<string, RefResult>;
beforeAll(async () => {
  root = await tempDir('crisp-omnisr-');
  if (hasTorch) refs = await runReferences(root, CASES);
}, 120_000);
afterAll(async () => removeDir(root));

describe.skipIf(!hasTorch)('OmniSR conversion against PyTorch', () => {
  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s',
    async (_name, c) => {
      const worst = await expectMatchesReference(c, refs.get(c.name)!);
      expect(worst).toBeLessThanOrEqual(1e-4);
    },
    60_000,
  );
});

describe.skipIf(!hasTorch)('OmniSR on small inputs', () => {
  it('pads inputs under 16 pixels (where the reference fails in ESA) and crops back', async () => {
    const converted = await convertBytes(readFileSync(refs.get('x4-window8')!.pth), 'pth');
    const p = await photoPatch({ image: 'set14/baboon.png', left: 5, top: 9, w: 12, h: 10, c: 3 });
    const out = await runOnnx(converted.onnx, p.data, [1, 3, 10, 12]);
    expect(out.dims).toEqual([1, 3, 40, 48]);
    expect(out.data.every(Number.isFinite)).toBe(true);
  });
});

describe.skipIf(!hasTorch)('OmniSR tiling', () => {
  it('the converted graph tells the tile planner its window', async () => {
    const converted = await convertBytes(readFileSync(refs.get('x3-rgba-window4')!.safetensors), 'safetensors');
    expect(tilingFromDoc(readOnnx(converted.onnx).doc)).toEqual({ window: 4, minSide: 16, relativeCost: 2.3 });
  });
});
