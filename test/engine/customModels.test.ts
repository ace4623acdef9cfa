/**
 * Imported (custom) models in local mode: `custom:<name>` tasks through the engine API, native scales
 * other than 4, refusal by an engine without a custom registry, and `crisp models list` / `upscale`.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import type { Engine } from '../../engine/service/engine.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { writeSafetensors } from '../convert/support/torchWriters.js';
import { randomRrdb } from '../convert/support/reference.js';
import { contractRefusal, makeEngine, removeDir, tempDir, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';
import { runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png'); // 72×72
const ANIME_PTH = path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth');
const base = { scale: 4, saveImageAs: 'png', enhanceFace: false };

async function rawPixels(file: string): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function compare(a: Buffer, b: Buffer): { maxDiff: number; psnr: number } {
  let maxDiff = 0;
  let se = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs((a[i] ?? 0) - (b[i] ?? 0));
    if (d > maxDiff) maxDiff = d;
    se += d * d;
  }
  const mse = se / a.length;
  return { maxDiff, psnr: mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse) };
}

async function run(engine: Engine, fields: Record<string, unknown>) {
  const r = await engine.startTask(LOCAL_CALLER, {
    fields,
    file: [{ originalFileName: 'bird_LRBI_x4.png', data: { path: BIRD } }],
  });
  const s = await waitForTask(engine, r.taskId);
  expect(s.error).toBeUndefined();
  expect(s.status).toBe('PROCESSED');
  const f = s.files[0]!;
  return {
    taskId: r.taskId,
    status: s,
    file: f,
    path: (await engine.openOutput(LOCAL_CALLER, r.taskId, f.fileName)).path,
  };
}

describe('custom models in the local engine', () => {
  let modelsDir: string;
  let engine: Engine;
  let plain: Engine;

  beforeAll(async () => {
    modelsDir = await tempDir('crisp-custom-');
    await importCustomModel(ANIME_PTH, { modelsDir, name: 'anime' });
    // Tiny random RRDBNets with native scales 1, 2 and 8: their pixels mean nothing, their geometry does.
    for (const [name, c] of [
      ['tiny-x1', { layout: 'basicsr', numBlocks: 1, scale: 1, numFeat: 8, numGrowCh: 4 }],
      ['tiny-x2', { layout: 'basicsr', numBlocks: 1, scale: 2, numFeat: 8, numGrowCh: 4 }],
      ['tiny-x8', { layout: 'esrgan', numBlocks: 1, scale: 8, numFeat: 8, numGrowCh: 4 }],
    ] as const) {
      const file = path.join(modelsDir, `${name}.safetensors`);
      await writeFile(file, writeSafetensors(randomRrdb(c).dict));
      await importCustomModel(file, { modelsDir, name });
    }
    engine = await makeEngine({ customModelsDir: modelsDir });
    plain = await makeEngine();
  });
  afterAll(async () => {
    await engine.close();
    await plain.close();
    await removeDir(engine.dataDir);
    await removeDir(plain.dataDir);
    await removeDir(modelsDir);
  });

  it('runs custom:<name> and gives the same pixels as the catalog model it was converted from', async () => {
    const custom = await run(engine, { ...base, model: 'custom:anime' });
    expect(custom.status.model).toBe('custom:anime');
    expect(custom.file.fileName).toBe('bird_LRBI_x4_custom-anime_x4.png');
    expect(custom.file.dimensions).toEqual({ width: 288, height: 288 });
    expect((await engine.getTaskRecord(LOCAL_CALLER, custom.taskId)).model).toBe('custom:anime');

    const catalog = await run(engine, { ...base, model: 'digital-art-4x' });
    const a = await rawPixels(custom.path);
    const b = await rawPixels(catalog.path);
    expect([a.width, a.height]).toEqual([288, 288]);
    const { maxDiff, psnr } = compare(a.data, b.data);
    expect(maxDiff <= 1 || psnr > 60, `max diff ${maxDiff}, PSNR ${psnr.toFixed(1)} dB`).toBe(true);
  });

  it.each([
    ['tiny-x1', 3],
    ['tiny-x2', 3],
    ['tiny-x8', 2],
  ])('resizes from the native scale of %s to ×%i', async (name, scale) => {
    const r = await run(engine, { ...base, model: `custom:${name}`, scale });
    expect(r.file.dimensions).toEqual({ width: 72 * scale, height: 72 * scale });
    const meta = await sharp(r.path).metadata();
    expect([meta.width, meta.height]).toEqual([72 * scale, 72 * scale]);
  });

  it('an engine without customModelsDir refuses custom names with the contract message', async () => {
    const e = await contractRefusal(
      plain.startTask(LOCAL_CALLER, {
        fields: { ...base, model: 'custom:anime' },
        file: [{ originalFileName: 'b.png', data: { path: BIRD } }],
      }),
    );
    expect(e.status).toBe(400);
    expect(e.message).toMatch(
      /^Bad Request: model 'custom:anime' is not one of 'service-standard-4x', .*'texture-boost-4x'$/,
    );
  });

  it('an unknown custom name is refused with 400 naming it', async () => {
    const e = await contractRefusal(
      engine.startTask(LOCAL_CALLER, {
        fields: { ...base, model: 'custom:nope' },
        file: [{ originalFileName: 'b.png', data: { path: BIRD } }],
      }),
    );
    expect(e.status).toBe(400);
    expect(e.message).toBe(
      'Bad Request: model \'custom:nope\' is not an imported custom model (see "crisp models list")',
    );
  });
});

describe('crisp CLI with custom models', () => {
  let home: string;
  let out: string;
  beforeAll(async () => {
    home = await tempDir('crisp-xdg-');
    out = await tempDir();
    // XDG_DATA_HOME moves the user models directory, where import, list and upscale look for custom models.
    await importCustomModel(ANIME_PTH, { modelsDir: path.join(home, 'crisp', 'models'), name: 'anime' });
  });
  afterAll(async () => {
    await removeDir(home);
    await removeDir(out);
  });

  it('models list shows imported models with their scale, architecture and "installed"', async () => {
    const json = await runCli(['models', 'list', '--json'], { XDG_DATA_HOME: home });
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as Array<{
      name: string;
      scale: number;
      architecture: string;
      installed: boolean;
    }>;
    expect(rows).toHaveLength(13);
    expect(rows.at(-1)).toMatchObject({
      name: 'custom:anime',
      scale: 4,
      architecture: 'SRVGGNetCompact',
      installed: true,
    });
    const table = await runCli(['models', 'list'], { XDG_DATA_HOME: home });
    expect(table.stdout).toMatch(
      /custom:anime\s+realesr-animevideov3\.pth\s+SRVGGNetCompact\s+unknown\s+installed\s+x4/,
    );
  });

  it('upscale --model custom:<name> runs it', async () => {
    const r = await runCli(['upscale', BIRD, '--model', 'custom:anime', '--scale', '2', '--out', out, '--json'], {
      XDG_DATA_HOME: home,
    });
    expect(r.stderr).not.toMatch(/crisp: error/);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      model: string;
      results: Array<{ output: string; width: number; height: number }>;
    };
    expect(doc.model).toBe('custom:anime');
    expect(doc.results[0]).toMatchObject({
      output: path.join(out, 'bird_LRBI_x4_custom-anime_x2.png'),
      width: 144,
      height: 144,
    });
  });
});
