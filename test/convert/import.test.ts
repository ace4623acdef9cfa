import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { register as registerFetch } from '../../app/cli/commands/modelsFetch.js';
import { register as registerImport } from '../../app/cli/commands/modelsImport.js';
import { listCustomModels, removeCustomModel } from '../../engine/core/models/customModels.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { describeNetworkError } from '../../engine/convert/install/fetch.js';
import { MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { writeSafetensors } from './support/torchWriters.js';
import { randomRrdb } from './support/reference.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-import-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  vi.restoreAllMocks();
});

describe('custom model import', () => {
  it('imports ncnn, .pth, .safetensors and .onnx files with their detected scale, and lists them', async () => {
    const a = await importCustomModel(path.join(MODELS_DIR, 'ncnn', '4xLSDIRCompactC3.bin'), { modelsDir: dir });
    expect(a).toMatchObject({ name: '4xLSDIRCompactC3', scale: 4, format: 'ncnn', file: '4xLSDIRCompactC3.onnx' });
    const b = await importCustomModel(path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'), {
      modelsDir: dir,
      name: 'anime',
    });
    expect(b).toMatchObject({
      name: 'anime',
      scale: 4,
      format: 'pth',
      description: 'SRVGGNetCompact x4 (64 feat, 16 conv, prelu)',
    });
    const rrdb = path.join(dir, 'tiny x2.safetensors');
    const { dict } = randomRrdb({ layout: 'basicsr', numBlocks: 2, scale: 2, numFeat: 8, numGrowCh: 8 });
    await writeFile(rrdb, writeSafetensors(dict));
    const c = await importCustomModel(rrdb, { modelsDir: dir });
    expect(c).toMatchObject({ name: 'tiny-x2', scale: 2, format: 'safetensors' });
    const onnxCopy = path.join(dir, 'ref.onnx');
    await copyFile(path.join(ONNX_DIR, 'realesr-animevideov3.onnx'), onnxCopy);
    const d = await importCustomModel(onnxCopy, { modelsDir: dir });
    expect(d).toMatchObject({ name: 'ref', scale: 4, format: 'onnx' });
    expect(Buffer.from(await readFile(d.path)).equals(await readFile(onnxCopy))).toBe(true);

    const listed = await listCustomModels(dir);
    expect(listed.map((m) => [m.name, m.scale])).toEqual([
      ['4xLSDIRCompactC3', 4],
      ['anime', 4],
      ['tiny-x2', 2],
      ['ref', 4],
    ]);
    expect(listed.every((m) => m.path.startsWith(path.join(dir, 'custom')))).toBe(true);
    expect(await removeCustomModel(dir, 'anime')).toBe(true);
    expect((await listCustomModels(dir)).map((m) => m.name)).toEqual(['4xLSDIRCompactC3', 'tiny-x2', 'ref']);
    await expect(importCustomModel(onnxCopy, { modelsDir: dir, name: '../escape' })).rejects.toThrow(
      /invalid model name/,
    );
  });

  it('`crisp models import` and `crisp models fetch` register under `models`', async () => {
    const program = new Command('crisp').exitOverride();
    program.command('models');
    registerFetch(program);
    registerImport(program);
    const models = program.commands.find((c) => c.name() === 'models')!;
    expect(models.commands.map((c) => c.name()).sort()).toEqual(['fetch', 'import']);
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
      out.push(String(s));
      return true;
    });
    const previous = process.exitCode;
    await program.parseAsync([
      'node',
      'crisp',
      'models',
      'import',
      path.join(MODELS_DIR, 'ncnn', 'realesr-animevideov3-x4.param'),
      '--name',
      'anime-ncnn',
      '--dir',
      dir,
    ]);
    process.exitCode = previous;
    vi.restoreAllMocks();
    expect(out.join('')).toMatch(/realesr-animevideov3-x4\.param: imported as anime-ncnn \(x4, ncnn model/);
    expect((await listCustomModels(dir)).map((m) => m.name)).toEqual(['anime-ncnn']);
  });

  it('describes connect timeouts as one offline line', () => {
    const e = Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
    expect(describeNetworkError(e, 'https://github.com/x.pth', 5000)).toBe(
      'cannot reach github.com (no connection within 5 s; are you offline?)',
    );
  });
});
