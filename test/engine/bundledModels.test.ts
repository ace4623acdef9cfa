/**
 * The weights shipped in resources/models: the manifest matches the files byte for byte (size and sha256),
 * they are the same files as ../shared/models, each has its licence text beside it, each maps to a catalog
 * entry (or the face stage's detector), and with no other models folder at all they make the catalog's
 * default an installed model and the face detector findable.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DETECTOR_FILES, findDetector } from '../../engine/core/faces/faceModels.js';
import {
  bundledModelsDir,
  catalogEntry,
  defaultModel,
  listModels,
  loadBundledManifest,
} from '../../engine/core/models/catalog.js';
import { MODELS_DIR } from '../helpers/paths.js';

const BUNDLED = bundledModelsDir({});
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-bundled-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('bundled models', () => {
  const manifest = loadBundledManifest(BUNDLED);

  it('lists the two photo/illustration models and the face detector, with the sizes and checksums of the files', () => {
    expect(manifest.map((f) => [f.file, f.model]).sort()).toEqual(
      [
        ['face/yunet_s_dynamic.onnx', 'face-detector'],
        ['realesr-animevideov3.onnx', 'digital-art-4x'],
        ['realesr-general-x4v3.onnx', 'service-lite-4x'],
      ].sort(),
    );
    for (const f of manifest) {
      const file = path.join(BUNDLED, f.file);
      expect(statSync(file).size, f.file).toBe(f.bytes);
      expect(sha256(file), f.file).toBe(f.sha256);
      // The same weights as the shared reference files (onnx/ or face/ there).
      const shared = path.join(MODELS_DIR, f.model === 'face-detector' ? f.file : path.join('onnx', f.file));
      expect(sha256(shared), `${f.file} vs ${shared}`).toBe(f.sha256);
      // Small enough to ship: the issue budgets about 7.6 MB for all three.
      expect(f.bytes).toBeLessThan(5_000_000);
    }
  });

  it('has a licence text beside every file, naming its licence and origin', () => {
    for (const f of manifest) {
      const text = readFileSync(path.join(BUNDLED, f.licenceFile), 'utf8');
      expect(text, f.licenceFile).toContain(path.basename(f.file));
      if (f.licence === 'BSD-3-Clause') {
        expect(text).toContain('BSD 3-Clause License');
        expect(text).toContain('Copyright (c) 2021, Xintao Wang');
      } else {
        expect(f.licence).toBe('Apache-2.0');
        expect(text).toContain('Apache License');
        expect(text).toContain('Version 2.0, January 2004');
        expect(text).toContain('MIT License');
      }
    }
  });

  it('maps each model file to its catalog entry (same file name and licence)', () => {
    for (const f of manifest) {
      if (f.model === 'face-detector') {
        expect(DETECTOR_FILES[0]).toBe(path.basename(f.file));
        continue;
      }
      expect(catalogEntry(f.model)).toMatchObject({ file: f.file, licence: f.licence });
    }
  });

  it('with no models folder but the bundled one, the default model is installed and the detector is found', () => {
    const dirs = [path.join(tmp, 'no-such-folder'), BUNDLED];
    const installed = listModels(dirs).filter((m) => m.installed);
    expect(installed.map((m) => m.name).sort()).toEqual(['digital-art-4x', 'service-lite-4x']);
    for (const m of installed) {
      expect(m.bundled).toBe(true);
      expect(m.path).toBe(path.join(BUNDLED, m.file));
    }
    const chosen = defaultModel(dirs);
    expect(installed.map((m) => m.name)).toContain(chosen);
    expect(chosen).toBe('service-lite-4x'); // the photo model: the better-ranked of the two
    expect(findDetector(dirs)).toBe(path.join(BUNDLED, 'face', 'yunet_s_dynamic.onnx'));
    // A file found in another folder first is not "bundled".
    expect(listModels([MODELS_DIR, BUNDLED]).find((m) => m.name === 'service-lite-4x')?.bundled).toBeUndefined();
  });
});
