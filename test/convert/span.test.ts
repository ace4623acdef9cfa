/**
 * SPAN checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds random-weight
 * models with the released key layout; Crisp's graph must reproduce their outputs on real photo patches.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import {
  expectMatchesReference,
  hasTorch,
  runReferences,
  type RefCase,
  type RefResult,
} from './support/srReference.js';

const CASES: RefCase[] = [
  {
    name: 'x4-rgb',
    arch: 'span',
    seed: 11,
    wrapper: 'params_ema',
    options: { in: 3, out: 3, feat: 16, scale: 4, norm: true },
    inputs: [
      { image: 'set14/baboon.png', left: 40, top: 60, w: 32, h: 32, c: 3 },
      { image: 'set14/lenna.png', left: 200, top: 210, w: 37, h: 29, c: 3 },
    ],
    expected: { kind: 'span', scale: 4, numFeat: 16, norm: true, inChannels: 3, outChannels: 3 },
  },
  {
    name: 'x2-rgb',
    arch: 'span',
    seed: 12,
    wrapper: 'params',
    options: { in: 3, out: 3, feat: 8, scale: 2, norm: true },
    inputs: [{ image: 'set5/butterfly.png', left: 100, top: 90, w: 41, h: 35, c: 3 }],
    expected: { kind: 'span', scale: 2, numFeat: 8, norm: true },
  },
  {
    name: 'x1-rgba',
    arch: 'span',
    seed: 13,
    wrapper: null,
    options: { in: 4, out: 4, feat: 8, scale: 1, norm: false },
    inputs: [{ image: 'set14/barbara.png', left: 300, top: 100, w: 40, h: 33, c: 4 }],
    expected: { kind: 'span', scale: 1, norm: false, inChannels: 4, outChannels: 4 },
  },
  {
    name: 'x3-grey',
    arch: 'span',
    seed: 14,
    wrapper: 'state_dict',
    options: { in: 1, out: 1, feat: 8, scale: 3, norm: false },
    inputs: [{ image: 'set5/bird.png', left: 60, top: 70, w: 30, h: 26, c: 1 }],
    expected: { kind: 'span', scale: 3, norm: false, inChannels: 1, outChannels: 1 },
  },
];

let root: string;
let refs: Map<string, RefResult>;
beforeAll(async () => {
  root = await tempDir('crisp-span-');
  if (hasTorch) refs = await runReferences(root, CASES);
}, 120_000);
afterAll(async () => removeDir(root));

describe.skipIf(!hasTorch)('SPAN conversion against PyTorch', () => {
  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s',
    async (_name, c) => {
      const worst = await expectMatchesReference(c, refs.get(c.name)!);
      expect(worst).toBeLessThanOrEqual(1e-4);
    },
    60_000,
  );
});
