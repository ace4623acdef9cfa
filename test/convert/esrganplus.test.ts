/**
 * ESRGAN+ checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds random-weight
 * models in ESRGAN's old-arch key layout with ESRGAN+'s extra 1×1 convs (the released nESRGAN+ size: 23 blocks
 * of 64 features, 32 growth; smaller ones; Real-ESRGAN-style pixel-unshuffled 1× and 2×); Crisp's graph must
 * reproduce their outputs on real photo patches. A plain RRDBNet module must not claim them.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rrdb } from '../../engine/convert/architectures/rrdb.js';
import { readSafetensors } from '../../engine/convert/checkpoint/safetensors.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { referenceSuite, type RefCase } from './support/srReference.js';
import { writeSafetensors } from './support/torchWriters.js';

const small = { in: 3, out: 3, feat: 16, grow: 8, blocks: 2 };
const CASES: RefCase[] = [
  {
    name: 'x4-released',
    arch: 'esrganplus',
    seed: 71,
    wrapper: null,
    options: { in: 3, out: 3, feat: 64, grow: 32, blocks: 23, ups: 2 },
    inputs: [{ image: 'set14/zebra.png', left: 200, top: 100, w: 20, h: 18, c: 3 }],
    expected: {
      kind: 'esrganplus',
      scale: 4,
      numFeat: 64,
      numGrowCh: 32,
      numBlocks: 23,
      upConvs: [3, 6],
      hrConv: 8,
      lastConv: 10,
      unshuffle: 1,
    },
  },
  {
    name: 'x4-small',
    arch: 'esrganplus',
    seed: 72,
    wrapper: 'params_ema',
    options: { ...small, blocks: 3, ups: 2, metadata: { license: 'Apache-2.0' } },
    inputs: [
      { image: 'set14/lenna.png', left: 200, top: 210, w: 37, h: 29, c: 3 },
      { image: 'set14/baboon.png', left: 40, top: 60, w: 32, h: 32, c: 3 },
    ],
    expected: { kind: 'esrganplus', scale: 4, numFeat: 16, numGrowCh: 8, numBlocks: 3 },
  },
  {
    name: 'x2',
    arch: 'esrganplus',
    seed: 73,
    wrapper: 'params',
    options: { ...small, ups: 1 },
    inputs: [{ image: 'set5/bird.png', left: 60, top: 70, w: 30, h: 26, c: 3 }],
    expected: { kind: 'esrganplus', scale: 2, upConvs: [3], hrConv: 5, lastConv: 7 },
  },
  {
    name: 'x8',
    arch: 'esrganplus',
    seed: 74,
    wrapper: null,
    options: { ...small, blocks: 1, ups: 3 },
    inputs: [{ image: 'set14/flowers.png', left: 150, top: 150, w: 15, h: 13, c: 3 }],
    expected: { kind: 'esrganplus', scale: 8, upConvs: [3, 6, 9] },
  },
  {
    name: 'x2-unshuffle',
    arch: 'esrganplus',
    seed: 75,
    wrapper: 'params_ema',
    options: { ...small, ups: 2, shuffle: 2 },
    inputs: [{ image: 'set14/barbara.png', left: 300, top: 100, w: 37, h: 29, c: 3 }],
    expected: { kind: 'esrganplus', scale: 2, unshuffle: 2, inChannels: 3 },
  },
  {
    name: 'x1-unshuffle',
    arch: 'esrganplus',
    seed: 76,
    wrapper: null,
    options: { ...small, ups: 2, shuffle: 4 },
    inputs: [{ image: 'set5/baby.png', left: 200, top: 200, w: 33, h: 27, c: 3 }],
    expected: { kind: 'esrganplus', scale: 1, unshuffle: 4, inChannels: 3 },
  },
];

const suite = referenceSuite('ESRGAN+', 'crisp-esrganplus-', CASES);

describe('ESRGAN+ beside RRDBNet', () => {
  it('the RRDBNet module leaves ESRGAN+ checkpoints alone (it would drop the 1×1 paths)', () => {
    const dict = readSafetensors(readFileSync(suite.refs.get('x2')!.safetensors));
    expect(rrdb.detect(dict, {})).toBeUndefined();
  });

  it('an ESRGAN+ under BasicSR key names is refused by name, not converted without its extra paths', async () => {
    const old = readSafetensors(readFileSync(suite.refs.get('x2')!.safetensors));
    const names: Array<[RegExp, string]> = [
      [/^model\.0\./, 'conv_first.'],
      [/^model\.1\.sub\.(\d+)\.RDB(\d)\.conv(\d)\.0\./, 'body.$1.rdb$2.conv$3.'],
      [/^model\.1\.sub\.(\d+)\.RDB(\d)\.conv1x1\./, 'body.$1.rdb$2.conv1x1.'],
      [/^model\.1\.sub\.2\./, 'conv_body.'],
      [/^model\.3\./, 'conv_up1.'],
      [/^model\.5\./, 'conv_hr.'],
      [/^model\.7\./, 'conv_last.'],
    ];
    const renamed = new Map(
      [...old].map(([k, t]) => {
        const rule = names.find(([re]) => re.test(k));
        return [rule ? k.replace(rule[0], rule[1]) : k, t] as const;
      }),
    );
    expect([...renamed.keys()].filter((k) => k.startsWith('model.'))).toEqual([]);
    await expect(convertBytes(writeSafetensors(renamed), 'safetensors')).rejects.toThrow(
      /ESRGAN\+ checkpoint with BasicSR key names/,
    );
  });

  it('crisp models import names the architecture, its configuration, scale and licence', async () => {
    const models = path.join(suite.root, 'cli-models');
    const released = path.join(suite.root, '4x-nESRGAN+.pth');
    copyFileSync(suite.refs.get('x4-released')!.pth, released);
    const a = await runCli(['models', 'import', released, '--name', 'nesrganplus', '--dir', models]);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${released}: imported as nesrganplus (x4, ESRGAN+ x4 (23 blocks, 64 feat, 32 grow)) → ${path.join(models, 'custom', 'nesrganplus.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}ESRGAN\+ ×4, 16\.\d+ M parameters, \d+\.\d MB, licence unknown$/);

    const b = await runCli([
      'models',
      'import',
      suite.refs.get('x4-small')!.safetensors,
      '--name',
      'meta',
      '--dir',
      models,
    ]);
    expect(b.code, b.stdout + b.stderr).toBe(0);
    expect(b.stdout).toMatch(/^ {2}ESRGAN\+ ×4, .*, licence Apache-2\.0$/m);

    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['nesrganplus', 'ESRGAN+', 4, null],
      ['meta', 'ESRGAN+', 4, 'Apache-2.0'],
    ]);
  }, 180_000);
});
