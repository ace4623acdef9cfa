/**
 * RCAN checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds random-weight
 * models with the released key layout (yulunzhang/RCAN's 10 × 20 blocks of 64 features, smaller ones, traiNNer-
 * redux's no-norm and pixel-unshuffle 1×/2× variants); Crisp's graph must reproduce their outputs on real photo
 * patches, including sizes that are not a multiple of the unshuffle factor.
 */
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { referenceSuite, type RefCase } from './support/srReference.js';

const small = { colors: 3, feat: 16, groups: 2, blocks: 3, reduction: 4, norm: true };
const CASES: RefCase[] = [
  {
    name: 'x4-released',
    arch: 'rcan',
    seed: 61,
    wrapper: null,
    options: { colors: 3, feat: 64, groups: 10, blocks: 20, reduction: 16, scale: 4, norm: true },
    inputs: [{ image: 'set14/baboon.png', left: 120, top: 40, w: 20, h: 18, c: 3 }],
    expected: {
      kind: 'rcan',
      scale: 4,
      numFeat: 64,
      numGroups: 10,
      numBlocks: 20,
      reduction: 16,
      norm: true,
      unshuffle: 1,
      upsample: [2, 2],
    },
  },
  {
    name: 'x2-small',
    arch: 'rcan',
    seed: 62,
    wrapper: 'params_ema',
    options: { ...small, scale: 2, metadata: { license: 'MIT' } },
    inputs: [
      { image: 'set14/lenna.png', left: 200, top: 210, w: 37, h: 29, c: 3 },
      { image: 'set5/butterfly.png', left: 100, top: 90, w: 32, h: 32, c: 3 },
    ],
    expected: { kind: 'rcan', scale: 2, numGroups: 2, numBlocks: 3, reduction: 4, upsample: [2] },
  },
  {
    name: 'x3',
    arch: 'rcan',
    seed: 63,
    wrapper: 'params',
    options: { ...small, groups: 1, blocks: 2, scale: 3 },
    inputs: [{ image: 'set5/bird.png', left: 60, top: 70, w: 30, h: 26, c: 3 }],
    expected: { kind: 'rcan', scale: 3, numGroups: 1, numBlocks: 2, upsample: [3] },
  },
  {
    name: 'x8-no-norm',
    arch: 'rcan',
    seed: 64,
    wrapper: 'params_ema',
    options: { ...small, groups: 1, blocks: 2, reduction: 8, scale: 8, norm: false },
    inputs: [{ image: 'set14/flowers.png', left: 150, top: 150, w: 19, h: 17, c: 3 }],
    expected: { kind: 'rcan', scale: 8, norm: false, reduction: 8, upsample: [2, 2, 2] },
  },
  {
    name: 'x2-unshuffle',
    arch: 'rcan',
    seed: 65,
    wrapper: 'params_ema',
    options: { ...small, scale: 2, norm: false, unshuffle: true },
    inputs: [
      { image: 'set14/barbara.png', left: 300, top: 100, w: 37, h: 29, c: 3 },
      { image: 'set14/barbara.png', left: 40, top: 200, w: 32, h: 24, c: 3 },
    ],
    expected: { kind: 'rcan', scale: 2, norm: false, unshuffle: 2, upsample: [2, 2] },
  },
  {
    name: 'x1-unshuffle',
    arch: 'rcan',
    seed: 66,
    wrapper: 'params',
    options: { ...small, groups: 1, scale: 1, unshuffle: true },
    inputs: [{ image: 'set5/baby.png', left: 200, top: 200, w: 33, h: 27, c: 3 }],
    expected: { kind: 'rcan', scale: 1, norm: true, unshuffle: 4, upsample: [2, 2] },
  },
];

const suite = referenceSuite('RCAN', 'crisp-rcan-', CASES);

describe('RCAN through crisp models import', () => {
  it('names the architecture, its configuration, scale and licence, and records them', async () => {
    const models = path.join(suite.root, 'cli-models');
    const released = path.join(suite.root, 'RCAN_BIX4.pth');
    copyFileSync(suite.refs.get('x4-released')!.pth, released);
    const a = await runCli(['models', 'import', released, '--dir', models, '--licence', 'MIT']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${released}: imported as RCAN_BIX4 (x4, RCAN x4 (10×20 blocks, 64 feat, reduction 16)) → ${path.join(models, 'custom', 'RCAN_BIX4.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}RCAN ×4, 15\.\d+ M parameters, \d+\.\d MB, licence MIT$/);

    const b = await runCli(['models', 'import', suite.refs.get('x2-unshuffle')!.safetensors, '--dir', models]);
    expect(b.code, b.stdout + b.stderr).toBe(0);
    expect(b.stdout).toContain('(x2, RCAN x2 (2×3 blocks, 16 feat, reduction 4, no norm, unshuffle 2))');

    const c = await runCli([
      'models',
      'import',
      suite.refs.get('x2-small')!.safetensors,
      '--name',
      'meta',
      '--dir',
      models,
    ]);
    expect(c.stdout).toMatch(/^ {2}RCAN ×2, .*, licence MIT$/m);

    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['RCAN_BIX4', 'RCAN', 4, 'MIT'],
      ['model', 'RCAN', 2, null],
      ['meta', 'RCAN', 2, 'MIT'],
    ]);
  }, 180_000);
});
