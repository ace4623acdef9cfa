/**
 * MoSR checkpoints (.pth and .safetensors) → ONNX, against PyTorch: support/sr_reference.py builds random-weight
 * models with spandrel's key layout — the released 4x_nomos2_mosr (64 dim, 24 blocks, kernel 7, expansion 1.5,
 * PixelShuffle), MoSR-T widths (48 dim, 5 blocks) with DySample, smaller ones with the DySample, geo-ensemble and
 * PixelShuffle upsamplers at 1×–4× and a grey model; Crisp's graph must reproduce their outputs on real photo
 * patches of odd sizes.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSafetensors } from '../../engine/convert/checkpoint/safetensors.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { runCli } from '../helpers/runCli.js';
import { referenceSuite, type RefCase } from './support/srReference.js';
import { writeSafetensors, type TestStateDict } from './support/torchWriters.js';

const small = { dim: 16, blocks: 2, kernel: 7, expansion: 1.5, convRatio: 1.0 };
const CASES: RefCase[] = [
  {
    name: 'x4-released',
    arch: 'mosr',
    seed: 71,
    wrapper: 'params_ema',
    options: { dim: 64, blocks: 24, kernel: 7, expansion: 1.5, convRatio: 1.0, upsampler: 'ps', scale: 4 },
    inputs: [{ image: 'set14/baboon.png', left: 120, top: 40, w: 20, h: 18, c: 3 }],
    expected: {
      kind: 'mosr',
      scale: 4,
      dim: 64,
      numBlocks: 24,
      hidden: 96,
      convChannels: 64,
      kernelSize: 7,
      upsampler: 'ps',
    },
  },
  {
    name: 'x2-dysample-t',
    arch: 'mosr',
    seed: 72,
    wrapper: 'params',
    options: { dim: 48, blocks: 5, kernel: 7, expansion: 1.5, convRatio: 1.0, upsampler: 'dys', scale: 2 },
    inputs: [
      { image: 'set14/lenna.png', left: 200, top: 210, w: 37, h: 29, c: 3 },
      { image: 'set5/butterfly.png', left: 100, top: 90, w: 32, h: 32, c: 3 },
    ],
    expected: { kind: 'mosr', scale: 2, dim: 48, numBlocks: 5, hidden: 72, upsampler: 'dys', outChannels: 3 },
  },
  {
    name: 'x3-dysample',
    arch: 'mosr',
    seed: 73,
    wrapper: null,
    options: { ...small, dim: 32, kernel: 5, expansion: 2, convRatio: 0.5, upsampler: 'dys', scale: 3 },
    inputs: [{ image: 'set5/bird.png', left: 60, top: 70, w: 30, h: 26, c: 3 }],
    expected: { kind: 'mosr', scale: 3, dim: 32, hidden: 64, convChannels: 16, kernelSize: 5, upsampler: 'dys' },
  },
  {
    name: 'x1-dysample',
    arch: 'mosr',
    seed: 74,
    wrapper: 'params_ema',
    options: { ...small, upsampler: 'dys', scale: 1 },
    inputs: [{ image: 'set5/head.png', left: 100, top: 100, w: 33, h: 27, c: 3 }],
    expected: { kind: 'mosr', scale: 1, upsampler: 'dys' },
  },
  {
    name: 'x2-gps',
    arch: 'mosr',
    seed: 75,
    wrapper: 'params_ema',
    options: { ...small, upsampler: 'gps', scale: 2 },
    inputs: [{ image: 'set14/flowers.png', left: 150, top: 150, w: 35, h: 23, c: 3 }],
    expected: { kind: 'mosr', scale: 2, upsampler: 'gps' },
  },
  {
    name: 'x2-grey',
    arch: 'mosr',
    seed: 76,
    wrapper: 'params',
    options: { ...small, in: 1, out: 1, upsampler: 'ps', scale: 2 },
    inputs: [{ image: 'set14/barbara.png', left: 300, top: 100, w: 31, h: 25, c: 1 }],
    expected: { kind: 'mosr', scale: 2, inChannels: 1, outChannels: 1, upsampler: 'ps' },
  },
];

const suite = referenceSuite('MoSR', 'crisp-mosr-', CASES);

describe('MoSR through crisp models import', () => {
  it('names the architecture, its configuration, scale and licence, and records them', async () => {
    const models = path.join(suite.root, 'cli-models');
    const released = path.join(suite.root, '4x_nomos2_mosr.pth');
    copyFileSync(suite.refs.get('x4-released')!.pth, released);
    const a = await runCli(['models', 'import', released, '--dir', models, '--licence', 'CC-BY-4.0']);
    expect(a.code, a.stdout + a.stderr).toBe(0);
    const lines = a.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${released}: imported as 4x_nomos2_mosr (x4, MoSR x4 (64 dim, 24 blocks, kernel 7, PixelShuffle)) → ${path.join(models, 'custom', '4x_nomos2_mosr.onnx')}`,
    );
    expect(lines[1]).toMatch(/^ {2}MoSR ×4, 4\.\d+ M parameters, \d+\.\d MB, licence CC-BY-4\.0$/);

    const b = await runCli(['models', 'import', suite.refs.get('x2-dysample-t')!.safetensors, '--dir', models]);
    expect(b.code, b.stdout + b.stderr).toBe(0);
    expect(b.stdout).toContain('(x2, MoSR x2 (48 dim, 5 blocks, kernel 7, DySample))');

    const listed = await listCustomModels(models);
    expect(listed.map((m) => [m.name, m.architecture, m.scale, m.licence ?? null])).toEqual([
      ['4x_nomos2_mosr', 'MoSR', 4, 'CC-BY-4.0'],
      ['model', 'MoSR', 2, null],
    ]);
  }, 180_000);
});

describe('MoSR checkpoints Crisp cannot convert', () => {
  it('refuses a depth-wise part wider than the gate (conv_ratio > expansion: its split cannot run) in a sentence', async () => {
    const dict: TestStateDict = new Map(readSafetensors(readFileSync(suite.refs.get('x2-gps')!.safetensors)));
    // 16 dim, expansion 1.5: a gate of 24 channels; conv_ratio 2 would give a 32-channel depth-wise conv.
    dict.set('gblocks.1.conv.weight', { shape: [32, 1, 7, 7], data: new Float32Array(32 * 49) });
    await expect(convertBytes(writeSafetensors(dict), 'safetensors')).rejects.toThrow(
      'MoSR gated block has 32 depthwise channels for a gate of 24',
    );
  });
});
