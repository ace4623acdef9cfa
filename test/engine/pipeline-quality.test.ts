/**
 * Quality through the whole pipeline with the real models on Set5 ×4: the pipeline must reproduce a bare
 * onnxruntime run exactly (same PSNR), match the published reference figures, and tile without seams.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelName } from '../../engine/contract/index.js';
import { createInference, type Inference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { upscaleImage } from '../../engine/core/pipeline/index.js';
import { bareUpscale, psnrY, readRgb, releaseBareSessions, type RgbImage } from '../bench/quality.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

const LR = path.join(IMAGES_DIR, 'set5-x4', 'lr');
const HR = path.join(IMAGES_DIR, 'set5-x4', 'hr');
// The LR pairs by name only: a stray file beside them (an output written next to its input) is not one.
const FILES = readdirSync(LR)
  .filter((f) => f.endsWith('_LRBI_x4.png'))
  .sort();

/** Manifest reference averages (whole image, 8-bit rounding, Y BT.601, crop 4). */
const REFERENCE: Record<string, { model: ModelName; db: number }> = {
  'realesr-general-x4v3': { model: 'service-lite-4x', db: 26.64 },
  'realesr-general-wdn-x4v3': { model: 'clear-boost-4x', db: 26.7 },
  'realesr-animevideov3': { model: 'digital-art-4x', db: 28.23 },
  '4xLSDIRCompactC3': { model: 'crystal-plus-4x', db: 29.6 },
};

let inference: Inference;
let tmp: string;
const hr = new Map<string, RgbImage>();

beforeAll(async () => {
  inference = createInference({ executionProvider: 'cpu' });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-quality-'));
  for (const f of FILES) hr.set(f, await readRgb(path.join(HR, f.replace('_LRBI_', '_HR_'))));
});

afterAll(async () => {
  await inference.release();
  await releaseBareSessions();
  rmSync(tmp, { recursive: true, force: true });
});

async function pipeline(model: ModelName, file: string, tileSize?: number): Promise<RgbImage> {
  const out = path.join(tmp, `${model}-${tileSize ?? 'auto'}-${file}`);
  const r = await upscaleImage(
    {
      input: { path: path.join(LR, file) },
      inputName: file,
      model: resolveModel(model, [ONNX_DIR]),
      scale: 4,
      format: 'png',
      compression: 0,
      outputPath: out,
      tileSize,
    },
    inference,
  );
  expect(r.provider).toBe('cpu');
  return readRgb(out);
}

describe('Set5 ×4 PSNR through upscaleImage', () => {
  it('has the five Set5 images', () => {
    expect(FILES).toHaveLength(5);
  });

  for (const [upstream, ref] of Object.entries(REFERENCE)) {
    it(`${ref.model} (${upstream}) equals the bare ONNX run and the reference ${ref.db} dB`, async () => {
      const model = resolveModel(ref.model, [ONNX_DIR]);
      let sum = 0;
      for (const f of FILES) {
        const lr = await readRgb(path.join(LR, f));
        const got = await pipeline(ref.model, f);
        const truth = hr.get(f)!;
        expect([got.width, got.height]).toEqual([lr.width * 4, lr.height * 4]);
        const baseline = psnrY(await bareUpscale(model.path, lr), truth);
        const ours = psnrY(got, truth);
        expect(Math.abs(ours - baseline), `${f}: ${ours} vs bare ${baseline}`).toBeLessThanOrEqual(0.01);
        sum += ours;
      }
      expect(Math.abs(sum / FILES.length - ref.db)).toBeLessThanOrEqual(0.05);
    });
  }
});

describe('tiling', () => {
  it('64-pixel tiles stay within 0.05 dB of untiled, with no visible seam', async () => {
    const model: ModelName = 'service-lite-4x'; // deepest installed network: the widest receptive field
    let dTotal = 0;
    let seam = 0;
    let seamN = 0;
    let inner = 0;
    let innerN = 0;
    for (const f of FILES) {
      const whole = await pipeline(model, f);
      const tiled = await pipeline(model, f, 64);
      const truth = hr.get(f)!;
      dTotal += psnrY(tiled, truth) - psnrY(whole, truth);
      // Tile seams in output pixels: planTiles splits evenly, so recompute the same cut lines.
      const cuts = (len: number) => {
        const n = Math.ceil(len / 64);
        const t = Math.ceil(len / n);
        return Array.from({ length: n - 1 }, (_, i) => (i + 1) * t * 4);
      };
      const lr = { w: whole.width / 4, h: whole.height / 4 };
      const xs = cuts(lr.w);
      const ys = cuts(lr.h);
      const near = (v: number, lines: number[]) => lines.some((c) => v >= c - 2 && v < c + 2);
      for (let y = 0; y < whole.height; y++) {
        for (let x = 0; x < whole.width; x++) {
          const i = (y * whole.width + x) * 3;
          const d =
            Math.abs(whole.data[i]! - tiled.data[i]!) +
            Math.abs(whole.data[i + 1]! - tiled.data[i + 1]!) +
            Math.abs(whole.data[i + 2]! - tiled.data[i + 2]!);
          if (near(x, xs) || near(y, ys)) {
            seam += d;
            seamN += 3;
          } else {
            inner += d;
            innerN += 3;
          }
        }
      }
    }
    expect(seamN).toBeGreaterThan(0);
    const seamMad = seam / seamN;
    const innerMad = inner / innerN;
    expect(Math.abs(dTotal / FILES.length)).toBeLessThanOrEqual(0.05);
    // "No larger than elsewhere", with a quarter of a grey level of slack for rounding noise.
    expect(seamMad, `seam ${seamMad} vs elsewhere ${innerMad}`).toBeLessThanOrEqual(innerMad + 0.25);
  });
});
