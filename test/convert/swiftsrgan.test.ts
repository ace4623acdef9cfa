/**
 * Swift-SRGAN checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds
 * random-weight generators with the released key layout (64 channels, 16 residual blocks, ×2 and ×4, the
 * BatchNorm statistics and PReLU slopes random too) and smaller ones at ×8, ×1 and grey; Crisp's graph must
 * reproduce their outputs on real photo patches of odd sizes.
 */
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { referenceSuite, type RefCase } from './support/srReference.js';

const CASES: RefCase[] = [
  {
    name: 'x4-released',
    arch: 'swiftsrgan',
    seed: 111,
    wrapper: 'model',
    options: { feat: 64, blocks: 16, scale: 4 },
    inputs: [{ image: 'set14/baboon.png', left: 120, top: 40, w: 21, h: 19, c: 3 }],
    expected: { kind: 'swiftsrgan', scale: 4, numFeat: 64, numBlocks: 16 },
  },
  {
    name: 'x2-released',
    arch: 'swiftsrgan',
    seed: 112,
    wrapper: null,
    options: { feat: 64, blocks: 16, scale: 2 },
    inputs: [
      { image: 'set14/lenna.png', left: 200, top: 210, w: 37, h: 29, c: 3 },
      { image: 'set5/butterfly.png', left: 100, top: 90, w: 32, h: 32, c: 3 },
    ],
    expected: { kind: 'swiftsrgan', scale: 2, numFeat: 64, numBlocks: 16 },
  },
  {
    name: 'x8-small',
    arch: 'swiftsrgan',
    seed: 113,
    wrapper: 'params_ema',
    options: { feat: 16, blocks: 2, scale: 8 },
    inputs: [{ image: 'set14/flowers.png', left: 150, top: 150, w: 15, h: 13, c: 3 }],
    expected: { kind: 'swiftsrgan', scale: 8, numFeat: 16, numBlocks: 2 },
  },
  {
    name: 'x1-grey',
    arch: 'swiftsrgan',
    seed: 117,
    wrapper: 'params',
    options: { in: 1, feat: 16, blocks: 3, scale: 1 },
    inputs: [{ image: 'set14/barbara.png', left: 300, top: 100, w: 33, h: 27, c: 1 }],
    expected: { kind: 'swiftsrgan', scale: 1, inChannels: 1, outChannels: 1, numBlocks: 3 },
  },
];

const suite = referenceSuite('Swift-SRGAN', 'crisp-swiftsrgan-', CASES);

describe('Swift-SRGAN through crisp models import', () => {
  it('names the architecture, its configuration, scale and licence, and records them', async () => {
    const models = path.join(suite.root, 'cli-models');
    const released = path.join(suite.root, 'swift_srgan_4x.pth');
    copyFileSync(suite.refs.get('x4-released')!.pth, released);
    const a = await runCli(['models', 'import', released, '--dir', models, '--licence', 'CC0-1.0']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${released}: imported as swift_srgan_4x (x4, Swift-SRGAN x4 (64 feat, 16 blocks)) → ${path.join(models, 'custom', 'swift_srgan_4x.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}Swift-SRGAN ×4, 205\.5 k parameters, \d+\.\d MB, licence CC0-1\.0$/);
    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['swift_srgan_4x', 'Swift-SRGAN', 4, 'CC0-1.0'],
    ]);
  }, 180_000);
});
