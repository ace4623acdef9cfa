import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  bundledCalibrationCrops,
  bundledCalibrationFile,
  CalibrationError,
  hasBundledCalibration,
} from '../../engine/convert/int8/calibrationSet.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-calib-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function stats(x: Float32Array): { min: number; max: number; std: number } {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let sq = 0;
  for (const v of x) {
    min = Math.min(min, v);
    max = Math.max(max, v);
    sum += v;
    sq += v * v;
  }
  const mean = sum / x.length;
  return { min, max, std: Math.sqrt(sq / x.length - mean * mean) };
}

describe('the bundled calibration set', () => {
  it('ships 48 textured 64×64 RGB crops in 0..1', async () => {
    expect(hasBundledCalibration()).toBe(true);
    const crops = await bundledCalibrationCrops();
    expect(crops).toHaveLength(48);
    expect(new Set(crops.map((c) => c.source)).size).toBe(48);
    for (const c of crops) {
      expect(c.size).toBe(64);
      expect(c.data).toHaveLength(3 * 64 * 64);
      const s = stats(c.data);
      expect(s.min).toBeGreaterThanOrEqual(0);
      expect(s.max).toBeLessThanOrEqual(1);
      // Chosen for texture: no flat or blank crop (a blank one would calibrate nothing).
      expect(s.std).toBeGreaterThan(0.03);
    }
  });

  it('takes fewer crops evenly across the sheet, photos and illustrations alike', async () => {
    const crops = await bundledCalibrationCrops({ count: 12 });
    expect(crops.map((c) => c.source)).toEqual(
      [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44].map((k) => `bundled#${k}`),
    );
  });

  it('is looked up under CRISP_RESOURCES_DIR when set, and a missing sheet is a clear error', async () => {
    const env = { CRISP_RESOURCES_DIR: tmp };
    expect(bundledCalibrationFile(env)).toBe(path.join(tmp, 'calibration', 'crops.png'));
    expect(hasBundledCalibration(env)).toBe(false);
    const missing = bundledCalibrationCrops({ file: path.join(tmp, 'calibration', 'crops.png') });
    await expect(missing).rejects.toBeInstanceOf(CalibrationError);
    await expect(missing).rejects.toThrow(/missing or unreadable.*--calibration DIR/);
  });
});
