/**
 * Real-CUGAN checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds random-
 * weight UpCunet2x / 3x / 4x / 2x_fast models with the released key layout (and the "pro" buffer); Crisp's graph
 * must reproduce their outputs on real photo patches, including sizes that are not a multiple of the variant's
 * padding multiple.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tilingFromDoc } from '../../engine/convert/architectures/registry.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { runOnnx } from './support/onnxRun.js';
import { referenceSuite, type RefCase } from './support/srReference.js';

const CASES: RefCase[] = [
  {
    name: 'up2x',
    arch: 'realcugan',
    seed: 81,
    wrapper: null,
    options: { variant: '2x' },
    inputs: [
      { image: 'set14/lenna.png', left: 200, top: 210, w: 37, h: 33, c: 3 },
      { image: 'set14/baboon.png', left: 40, top: 60, w: 32, h: 32, c: 3 },
    ],
    expected: { kind: 'realcugan', variant: 'UpCunet2x', scale: 2, pro: false, inChannels: 3, outChannels: 3 },
  },
  {
    name: 'up2x-pro',
    arch: 'realcugan',
    seed: 82,
    wrapper: 'params_ema',
    options: { variant: '2x', pro: true, metadata: { license: 'MIT' } },
    inputs: [{ image: 'set5/butterfly.png', left: 100, top: 90, w: 36, h: 41, c: 3 }],
    expected: { kind: 'realcugan', variant: 'UpCunet2x', scale: 2, pro: true },
  },
  {
    name: 'up3x',
    arch: 'realcugan',
    seed: 83,
    wrapper: null,
    options: { variant: '3x' },
    inputs: [{ image: 'set5/bird.png', left: 60, top: 70, w: 34, h: 33, c: 3 }],
    expected: { kind: 'realcugan', variant: 'UpCunet3x', scale: 3, pro: false },
  },
  {
    name: 'up4x-pro',
    arch: 'realcugan',
    seed: 84,
    wrapper: 'params',
    options: { variant: '4x', pro: true },
    inputs: [{ image: 'set14/flowers.png', left: 150, top: 150, w: 33, h: 35, c: 3 }],
    expected: { kind: 'realcugan', variant: 'UpCunet4x', scale: 4, pro: true },
  },
  {
    name: 'up2x-fast',
    arch: 'realcugan',
    seed: 85,
    wrapper: null,
    options: { variant: 'fast' },
    inputs: [{ image: 'set14/barbara.png', left: 300, top: 100, w: 44, h: 40, c: 3 }],
    expected: { kind: 'realcugan', variant: 'UpCunet2x_fast', scale: 2, pro: false, inChannels: 3 },
  },
];

const suite = referenceSuite('Real-CUGAN', 'crisp-realcugan-', CASES);

describe('Real-CUGAN beyond the reference', () => {
  it('runs sides the reference cannot (tiny ones; off-multiple ones for fast), at every variant, and tiles by its multiple', async () => {
    for (const name of ['up2x', 'up3x', 'up4x-pro', 'up2x-fast']) {
      const r = suite.refs.get(name)!;
      const converted = await convertBytes(readFileSync(r.safetensors), 'safetensors');
      const scale = converted.spec!.scale;
      const tiling = tilingFromDoc(readOnnx(converted.onnx).doc);
      expect(tiling?.window).toBe(name === 'up3x' || name === 'up2x-fast' ? 4 : 2);
      for (const [h, w] of [
        [6, 5],
        [1, 9],
        [42, 41],
      ] as const) {
        const out = await runOnnx(converted.onnx, new Float32Array(3 * h * w).fill(0.5), [1, 3, h, w]);
        expect(out.dims).toEqual([1, 3, h * scale, w * scale]);
        expect(out.data.every(Number.isFinite)).toBe(true);
      }
    }
  }, 120_000);

  it('crisp models import names the architecture, its variant, scale and licence', async () => {
    const models = path.join(suite.root, 'cli-models');
    const file = path.join(suite.root, 'pro-conservative-up2x.pth');
    copyFileSync(suite.refs.get('up2x-pro')!.pth, file);
    const a = await runCli(['models', 'import', file, '--dir', models, '--licence', 'MIT']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${file}: imported as pro-conservative-up2x (x2, Real-CUGAN x2 (UpCunet2x, pro)) → ${path.join(models, 'custom', 'pro-conservative-up2x.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}Real-CUGAN ×2, 1\.\d+ M parameters, \d+\.\d MB, licence MIT$/);
    const b = await runCli(['models', 'import', suite.refs.get('up2x-fast')!.pth, '--name', 'fast', '--dir', models]);
    expect(b.stdout).toContain('(x2, Real-CUGAN x2 (UpCunet2x_fast))');
    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['pro-conservative-up2x', 'Real-CUGAN', 2, 'MIT'],
      ['fast', 'Real-CUGAN', 2, null],
    ]);
  }, 120_000);
});
