/**
 * Checkpoints of architectures Crisp does not convert are named precisely (from their key patterns), through the
 * API and through `crisp models import`, and nothing is installed.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertBytes } from '../../engine/convert/convert.js';
import { isNonCommercial, licenceFromFile, licenceLabel } from '../../engine/core/models/licence.js';
import { runCli } from '../helpers/runCli.js';
import { writePthZip, writeSafetensors, type TestStateDict } from './support/torchWriters.js';

const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
const dictOf = (keys: string[]): TestStateDict => new Map(keys.map((k) => [k, t([4, 4, 3, 3])]));

const CASES: Array<[string, string[], string]> = [
  [
    'CodeFormer',
    ['quantize.embedding.weight', 'position_emb', 'ft_layers.0.self_attn.in_proj_weight', 'encoder.blocks.0.weight'],
    'this is a CodeFormer checkpoint (a face restorer); CodeFormer is not supported',
  ],
  [
    'RestoreFormer',
    ['quantize.embedding.weight', 'encoder.conv_in.weight', 'quant_conv.weight', 'decoder.conv_out.weight'],
    'this is a RestoreFormer checkpoint (a face restorer); RestoreFormer is not supported',
  ],
  [
    // Embeds an RRDBNet: must not be converted as a plain one (its degradation branch would be dropped).
    'MMRealSR',
    [
      'conv_first.weight',
      'body.0.rdb1.conv1.weight',
      'conv_last.weight',
      'am_list.0.fc.0.weight',
      'de_net.conv_first.0.weight',
    ],
    'this is a MMRealSR checkpoint (a degradation-aware RRDBNet); MMRealSR is not supported',
  ],
  [
    'PLKSR',
    ['feats.0.weight', 'feats.1.channe_mixer.0.weight', 'feats.1.lk.conv.weight'],
    'this is a PLKSR checkpoint (the original PLKSR, not RealPLKSR); PLKSR is not supported',
  ],
  [
    'SCUNet',
    ['m_head.0.weight', 'm_tail.0.weight', 'm_body.0.weight'],
    'this is a SCUNet checkpoint (a denoiser); SCUNet is not supported',
  ],
];

describe('unsupported architectures are named', () => {
  it.each(CASES)('%s', async (_name, keys, message) => {
    await expect(convertBytes(writePthZip(dictOf(keys), { wrapper: 'params_ema' }), 'pth')).rejects.toThrow(message);
    await expect(convertBytes(writeSafetensors(dictOf(keys)), 'safetensors')).rejects.toThrow(message);
  });

  it('an unknown state dict lists what was found and what is supported', async () => {
    await expect(convertBytes(writePthZip(dictOf(['foo.0.weight', 'bar.weight'])), 'pth')).rejects.toThrow(
      /^unsupported architecture: 2 tensors, keys starting foo\.0, bar\.weight; supported are RRDBNet \(ESRGAN\/BasicSR\), SRVGGNetCompact, SPAN, RealPLKSR, OmniSR, SwinIR, HAT, DAT, SRFormer, RCAN, ESRGAN\+, Real-CUGAN, MoSR, FDAT, RGT, Swift-SRGAN, DRCT, ATD, DITN, DCTLSA and CRAFT$/,
    );
  });

  it('crisp models import says so in one line and installs nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'crisp-unsupported-'));
    const file = path.join(dir, 'codeformer.pth');
    writeFileSync(file, writePthZip(dictOf(CASES[0]![1]), { wrapper: 'params_ema' }));
    const models = path.join(dir, 'models');
    const r = await runCli(['models', 'import', file, '--dir', models]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${file}: not imported: ${CASES[0]![2]}\n`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(path.join(models, 'custom'))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('model licences', () => {
  it('are read from safetensors metadata, else an SPDX id in the file name', () => {
    expect(licenceFromFile('4x-Foo.safetensors', { license: 'CC-BY-NC-SA-4.0' })).toBe('CC-BY-NC-SA-4.0');
    expect(licenceFromFile('4x_Foo_cc_by_nc_sa_4.0.pth')).toBe('CC-BY-NC-SA-4.0');
    expect(licenceFromFile('2x-Bar-CC-BY-4.0.pth')).toBe('CC-BY-4.0');
    expect(licenceFromFile('1x-Baz-MIT.pth')).toBe('MIT');
    expect(licenceFromFile('1x-SMITH-deblur.pth')).toBeNull();
    expect(licenceFromFile('4x-Plain.pth')).toBeNull();
  });

  it('non-commercial ones are marked', () => {
    expect(isNonCommercial('CC-BY-NC-SA-4.0')).toBe(true);
    expect(isNonCommercial('research only')).toBe(true);
    expect(isNonCommercial('CC-BY-4.0')).toBe(false);
    expect(isNonCommercial('Apache-2.0')).toBe(false);
    expect(licenceLabel('CC-BY-NC-4.0')).toBe('CC-BY-NC-4.0 (non-commercial)');
    expect(licenceLabel(undefined)).toBe('unknown');
  });
});

describe('hostile shapes', () => {
  it('an OmniSR position-bias table implying a huge window is refused, not expanded', async () => {
    const ws = 101;
    const dict: TestStateDict = new Map([
      ['input.weight', t([8, 3, 3, 3])],
      ['up.0.weight', t([48, 8, 3, 3])],
      ['residual_layer.0.residual_layer.0.layer.0.fn.0.weight', t([8, 8, 1, 1])],
      ['residual_layer.0.residual_layer.0.layer.2.fn.rel_pos_bias.weight', t([(2 * ws - 1) ** 2, 1])],
      ['residual_layer.0.residual_layer.1.weight', t([8, 8, 1, 1])],
    ]);
    await expect(convertBytes(writeSafetensors(dict), 'safetensors')).rejects.toThrow(
      'OmniSR window 101 is larger than 64',
    );
  });
});
