/**
 * SPAN checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds random-weight
 * models with the released key layout; Crisp's graph must reproduce their outputs on real photo patches.
 */
import { copyFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { runCli } from '../helpers/runCli.js';
import { maxAbsDiff, runOnnx } from './support/onnxRun.js';
import { referenceSuite, type RefCase } from './support/srReference.js';

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
    options: { in: 3, out: 3, feat: 8, scale: 2, norm: true, metadata: { license: 'MIT' } },
    inputs: [{ image: 'set5/butterfly.png', left: 100, top: 90, w: 41, h: 35, c: 3 }],
    expected: { kind: 'span', scale: 2, numFeat: 8, norm: true },
  },
  {
    name: 'x1-rgba',
    arch: 'span',
    seed: 13,
    wrapper: null,
    options: { in: 4, out: 4, feat: 8, scale: 1, norm: false },
    inputs: [
      { image: 'set14/barbara.png', left: 300, top: 100, w: 40, h: 33, c: 4 },
      { image: 'set14/barbara.png', left: 300, top: 100, w: 40, h: 33, c: 4, alpha: 'opaque' },
    ],
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
  {
    name: 'x8-rgb',
    arch: 'span',
    seed: 15,
    wrapper: 'params_ema',
    options: { in: 3, out: 3, feat: 8, scale: 8, norm: true },
    inputs: [{ image: 'set14/flowers.png', left: 150, top: 150, w: 19, h: 17, c: 3 }],
    expected: { kind: 'span', scale: 8 },
  },
];

const suite = referenceSuite('SPAN', 'crisp-span-', CASES);

describe('SPAN models imported for the RGB pipeline', () => {
  it('a grey model runs on RGB tiles: luma in, its output repeated in R, G and B', async () => {
    const r = suite.refs.get('x3-grey')!;
    const models = path.join(suite.root, 'grey-models');
    const m = await importCustomModel(r.safetensors, { modelsDir: models, name: 'grey' });
    expect(m).toMatchObject({ scale: 3, architecture: 'SPAN', description: 'SPAN x3 (8 feat, no norm, grey)' });
    const p = r.inputs[0]!;
    const n = p.w * p.h;
    // The pipeline feeds a grey picture as three equal channels.
    const rgb = new Float32Array(3 * n);
    for (let c = 0; c < 3; c++) rgb.set(p.data, c * n);
    const out = await runOnnx(m.path, rgb, [1, 3, p.h, p.w]);
    expect(out.dims).toEqual([1, 3, p.h * 3, p.w * 3]);
    const plane = 9 * n;
    for (let c = 0; c < 3; c++) {
      expect(maxAbsDiff(out.data.subarray(c * plane, (c + 1) * plane), r.outputs[0]!)).toBeLessThanOrEqual(1e-4);
    }
  });

  it('an RGBA model runs on RGB tiles with an opaque alpha, and its RGB output is kept', async () => {
    const r = suite.refs.get('x1-rgba')!;
    const m = await importCustomModel(r.pth, { modelsDir: path.join(suite.root, 'rgba-models'), name: 'rgba' });
    expect(m.description).toBe('SPAN x1 (8 feat, no norm, RGBA)');
    const p = r.inputs[1]!; // the opaque patch
    const n = p.w * p.h;
    const out = await runOnnx(m.path, p.data.slice(0, 3 * n), [1, 3, p.h, p.w]);
    expect(out.dims).toEqual([1, 3, p.h, p.w]);
    expect(maxAbsDiff(out.data, r.outputs[1]!.subarray(0, 3 * n))).toBeLessThanOrEqual(1e-4);
  });

  it('crisp models import prints the architecture, parameters and licence, and records them', async () => {
    const models = path.join(suite.root, 'cli-models');
    const r = suite.refs.get('x4-rgb')!;
    const file = path.join(suite.root, '4x-SPAN-test-CC-BY-NC-SA-4.0.pth');
    copyFileSync(r.pth, file);
    const a = await runCli(['models', 'import', file, '--name', 'span4', '--dir', models]);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${file}: imported as span4 (x4, SPAN x4 (16 feat)) → ${path.join(models, 'custom', 'span4.onnx')}`,
    );
    expect(lines[1]).toMatch(
      /^ {2}SPAN ×4, \d+\.\d k parameters, \d+\.\d MB, licence CC-BY-NC-SA-4\.0 \(non-commercial\)$/,
    );
    expect(lines).toHaveLength(2);

    // No licence in the file: the user is told to record one, and --licence does.
    const plain = path.join(suite.root, 'span-x1.pth');
    copyFileSync(suite.refs.get('x1-rgba')!.pth, plain);
    const b = await runCli(['models', 'import', plain, '--dir', models]);
    expect(b.code).toBe(0);
    expect(b.stdout).toMatch(
      /licence unknown\n {2}the file states no licence: check its source and record it with --licence/,
    );
    const c = await runCli(['models', 'import', plain, '--dir', models, '--licence', 'Apache-2.0']);
    expect(c.stdout).toMatch(/licence Apache-2\.0\n$/);

    // A .safetensors file's own metadata names its licence.
    const d = await runCli([
      'models',
      'import',
      suite.refs.get('x2-rgb')!.safetensors,
      '--name',
      'meta',
      '--dir',
      models,
    ]);
    expect(d.stdout).toMatch(/, licence MIT\n$/);

    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence])).toEqual([
      ['span4', 'SPAN', 4, 'CC-BY-NC-SA-4.0'],
      ['span-x1', 'SPAN', 1, 'Apache-2.0'],
      ['meta', 'SPAN', 2, 'MIT'],
    ]);
    expect(listed[0]!.parameters).toBeGreaterThan(10_000);
    expect(existsSync(listed[0]!.path)).toBe(true);
  }, 120_000);
});
