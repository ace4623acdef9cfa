/** `--face`, `--face-model`, `--face-strength` on the real `crisp` entry point. */
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';
import { constantFaceModel, wrongShapeFaceModel, writeModel } from './support/faceModels.js';

const WOMAN = path.join(IMAGES_DIR, 'set5-x2', 'lr', 'woman_LRBI_x2.png');

describe('crisp upscale with faces', () => {
  let dir: string;
  let models: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-face-cli-');
    models = path.join(dir, 'models');
    mkdirSync(path.join(models, 'face'), { recursive: true });
    symlinkSync(ONNX_DIR, path.join(models, 'onnx'));
    symlinkSync(
      path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx'),
      path.join(models, 'face', 'yunet_s_dynamic.onnx'),
    );
    writeModel(path.join(models, 'face'), 'custom-red.onnx', constantFaceModel([1, -1, -1]));
  });
  afterAll(async () => removeDir(dir));

  it('--face with no face model installed is refused before any work, with the ways to get one', async () => {
    const out = path.join(dir, 'none');
    mkdirSync(out);
    // shared/models has the detector but no face restorer.
    const r = await runCli(['upscale', WOMAN, '--face', '--out', out]);
    expect(r.code).not.toBe(0);
    expect(crispLines(r.stderr)).toEqual([
      'crisp: error: Face enhancement needs a face model and none is installed. Get one with "crisp models fetch gfpgan-1.4", or import one with "crisp models import FILE --face" (a GFPGAN v1.3/v1.4 .pth, or an ONNX face restorer: 1×3×512×512 RGB in [-1, 1]).',
    ]);
    expect(readdirSync(out)).toEqual([]);
  });

  it('--face-strength outside 0..1 is a usage error', async () => {
    const r = await runCli(['upscale', WOMAN, '--face-strength', '2'], { CRISP_MODELS_DIR: models });
    expect(r.code).not.toBe(0);
    expect(crispLines(r.stderr)).toEqual(["crisp: error: --face-strength must be a number from 0 to 1, not '2'"]);
  });

  it('--face --face-model enhances faces with that model', async () => {
    const out = path.join(dir, 'out');
    mkdirSync(out);
    const r = await runCli(
      [
        'upscale',
        WOMAN,
        '--model',
        'digital-art-4x',
        '--scale',
        '2',
        '--face',
        '--face-model',
        'custom:red',
        '--out',
        out,
        '--json',
      ],
      { CRISP_MODELS_DIR: models },
    );
    expect(r.code).toBe(0);
    const name = 'woman_LRBI_x2_digital-art-4x-face-custom-red_x2.png';
    expect(readdirSync(out)).toEqual([name]);
    const { data, info } = await sharp(path.join(out, name)).raw().toBuffer({ resolveWithObject: true });
    const i = (Math.round(info.height * 0.35) * info.width + Math.round(info.width * 0.5)) * info.channels;
    expect(Array.from(data.subarray(i, i + 3))).toEqual([255, 0, 0]);
    const report = JSON.parse(r.stdout) as { results: Array<{ faces: unknown }> };
    expect(report.results.map((x) => x.faces)).toEqual([{ found: 1, enhanced: 1 }]);
  });

  it('--json says faces: null without --face', async () => {
    const out = path.join(dir, 'plain');
    mkdirSync(out);
    const r = await runCli(['upscale', WOMAN, '--model', 'digital-art-4x', '--scale', '2', '--out', out, '--json'], {
      CRISP_MODELS_DIR: models,
    });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { results: Array<{ faces: unknown }> }).results.map((x) => x.faces)).toEqual([
      null,
    ]);
  });

  it('models list shows face models in their own section', async () => {
    const r = await runCli(['models', 'list'], { CRISP_MODELS_DIR: models });
    expect(r.code).toBe(0);
    const section = r.stdout.split('Face models (--face):\n')[1]!.split('\n\n')[0]!.split('\n');
    expect(section[0]).toMatch(/^FACE MODEL +OPEN MODEL +LICENCE +STATUS$/);
    expect(section[1]).toMatch(/^gfpgan-1\.4 +GFPGAN v1\.4 +Apache-2\.0 +not installed$/);
    expect(section[3]).toMatch(/^custom:red +\S+custom-red\.onnx +custom +installed$/);
    expect(section[4]).toBe(`Face detector: ${path.join(models, 'face', 'yunet_s_dynamic.onnx')}`);
  });
});

describe('crisp models import --face', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-face-import-');
  });
  afterAll(async () => removeDir(dir));

  it('installs a face-convention ONNX as custom:NAME and refuses an upscaler with a sentence', async () => {
    const models = path.join(dir, 'models');
    const good = writeModel(dir, 'restorer.onnx', constantFaceModel([0.5, 0, -0.5]));
    const ok = await runCli(['models', 'import', good, '--face', '--name', 'mine', '--dir', models]);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe(
      `${good}: imported as face model custom:mine → ${path.join(models, 'face', 'custom-mine.onnx')}`,
    );
    expect(readdirSync(path.join(models, 'face'))).toEqual(['custom-mine.onnx']);
    const bad = writeModel(dir, 'upscaler.onnx', wrongShapeFaceModel());
    const no = await runCli(['models', 'import', bad, '--face', '--dir', models]);
    expect(no.code).not.toBe(0);
    expect(no.stdout).toBe('');
    expect(no.stderr.trim()).toBe(
      `${bad}: not imported: upscaler.onnx answered [1×3×1024×1024] for a 1×3×512×512 face; a face model returns the same shape.`,
    );
    expect(readdirSync(path.join(models, 'face'))).toEqual(['custom-mine.onnx']);
  });
});
