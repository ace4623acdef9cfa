import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_NAMES } from '../../engine/contract/index.js';
import {
  ModelNotInstalledError,
  bundledModelsDir,
  defaultModel,
  listModels,
  loadCatalog,
  modelSearchDirs,
  resolveModel,
  userModelsDir,
} from '../../engine/core/models/catalog.js';
import { MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';

const INSTALLED = ['service-lite-4x', 'clear-boost-4x', 'digital-art-4x', 'crystal-plus-4x'];
const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-catalog-'));
// tmp holds one model file directly (a symlink: weights are never copied); made here, before any test, so the
// tests that read it do not depend on their order (--sequence.shuffle).
beforeAll(() => symlinkSync(path.join(ONNX_DIR, '4xLSDIRCompactC3.onnx'), path.join(tmp, '4xLSDIRCompactC3.onnx')));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('catalog', () => {
  it('maps every contract model name exactly once, with complete entries', () => {
    const cat = loadCatalog();
    expect(cat.map((e) => e.name).sort()).toEqual([...MODEL_NAMES].sort());
    for (const e of cat) {
      expect(e.file).toMatch(/^[\w.-]+\.onnx$/);
      expect(e.download.url).toMatch(/^https:\/\/github\.com\/.+\/releases\/download\/.+\.pth$/);
      expect(e.scale).toBe(4);
      expect(e.description.length).toBeLessThan(120);
    }
    expect(new Set(cat.map((e) => e.photoRank)).size).toBe(cat.length);
    expect(loadCatalog()).toBe(cat); // cached
    const lite = cat.find((e) => e.name === 'service-lite-4x');
    expect(lite).toMatchObject({
      model: 'realesr-general-x4v3',
      architecture: 'SRVGGNetCompact',
      file: 'realesr-general-x4v3.onnx',
      licence: 'BSD-3-Clause',
    });
    expect(cat.find((e) => e.name === 'crystal-plus-4x')).toMatchObject({
      model: '4xLSDIRCompactC3',
      licence: 'CC-BY-4.0',
    });
    expect(cat.find((e) => e.name === 'service-standard-4x')?.download.url).toBe(
      'https://github.com/xinntao/Real-ESRGAN/releases/download/v0.1.0/RealESRGAN_x4plus.pth',
    );
  });

  it('searches CRISP_MODELS_DIR, then the user directory, then bundled resources', () => {
    const env = { CRISP_MODELS_DIR: '/m', HOME: '/home/u', XDG_DATA_HOME: '/xdg' };
    expect(modelSearchDirs(env)).toEqual(['/m', path.join('/xdg', 'crisp', 'models'), bundledModelsDir(env)]);
    expect(modelSearchDirs({ HOME: '/home/u' })[0]).toBe(path.join('/home/u', '.local', 'share', 'crisp', 'models'));
    expect(userModelsDir({ HOME: '/Users/u' }, 'darwin')).toBe(
      path.join('/Users/u', 'Library', 'Application Support', 'Crisp', 'models'),
    );
    expect(userModelsDir({ APPDATA: 'C:\\AppData' }, 'win32')).toBe(path.join('C:\\AppData', 'Crisp', 'models'));
    expect(bundledModelsDir({})).toMatch(/resources[\\/]models$/);
  });

  it('resolves files directly in a directory or under its onnx/ subfolder', () => {
    // MODELS_DIR holds the files under onnx/; tmp holds one directly.
    const viaSub = resolveModel('service-lite-4x', [MODELS_DIR]);
    expect(viaSub.path).toBe(path.join(ONNX_DIR, 'realesr-general-x4v3.onnx'));
    expect(resolveModel('crystal-plus-4x', [tmp, MODELS_DIR]).path).toBe(path.join(tmp, '4xLSDIRCompactC3.onnx'));
    expect(resolveModel('crystal-plus-4x', [tmp, MODELS_DIR]).entry.name).toBe('crystal-plus-4x');
  });

  it('explains how to install a missing model', () => {
    const dirs = [path.join(tmp, 'nothing'), MODELS_DIR];
    let err: unknown;
    try {
      resolveModel('natural-max-4x', dirs);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ModelNotInstalledError);
    expect((err as Error).message).toBe(
      `Model 'natural-max-4x' (4xNomos8kSC) is not installed. Install it with "crisp models fetch natural-max-4x" or put 4xNomos8kSC.onnx in ${dirs[0]}.`,
    );
  });

  it('lists installation state and picks the best installed photo model', () => {
    const listed = listModels([MODELS_DIR]);
    expect(
      listed
        .filter((m) => m.installed)
        .map((m) => m.name)
        .sort(),
    ).toEqual([...INSTALLED].sort());
    for (const m of listed)
      expect(m.installed ? m.path : undefined).toBe(m.installed ? path.join(ONNX_DIR, m.file) : undefined);
    expect(defaultModel([MODELS_DIR])).toBe('crystal-plus-4x');
    // Nothing installed: the best model overall, the one to fetch first.
    expect(defaultModel([path.join(tmp, 'none'), path.join(tmp, 'x')])).toBe('natural-max-4x');
    // Only the symlinked C3 file in tmp: it wins even though better models exist in the catalog.
    expect(defaultModel([tmp])).toBe('crystal-plus-4x');
  });
});
