/**
 * Scales other than the model's native ×4: each tile is resized to the requested scale before it is stitched.
 * That must match the whole-image path (model at ×4, then one Lanczos-3 resize), show no tile seams, keep
 * alpha in step, and let the output limit apply to the requested output only.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scale } from '../../engine/contract/index.js';
import { createInference, type Inference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { ImageInputError, upscaleImage, type UpscaleJob } from '../../engine/core/pipeline/index.js';
import { bareUpscale, psnrY, readRgb, releaseBareSessions, type RgbImage } from '../bench/quality.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

const FACE = path.join(IMAGES_DIR, 'set14', 'face.png'); // 276×276
const BUTTERFLY = path.join(IMAGES_DIR, 'set5-x4', 'lr', 'butterfly_LRBI_x4.png'); // 64×64
const model = resolveModel('digital-art-4x', [MODELS_DIR]); // the fastest network: these tests are about resizing

let inference: Inference;
let tmp: string;
let n = 0;

beforeAll(() => {
  inference = createInference({ executionProvider: 'cpu' });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-resize-'));
});
afterAll(async () => {
  await inference.release();
  await releaseBareSessions();
  rmSync(tmp, { recursive: true, force: true });
});

async function run(input: UpscaleJob['input'], opts: Partial<UpscaleJob>): Promise<Buffer> {
  const outputPath = path.join(tmp, `out-${n++}.png`);
  await upscaleImage(
    { input, inputName: 'test image', model, scale: 4, format: 'png', compression: 0, outputPath, ...opts },
    inference,
  );
  return readFileSync(outputPath);
}

/** Tile cut lines in output pixels: planTiles splits evenly, so recompute the same cuts. */
function cuts(len: number, tile: number, scale: number): number[] {
  const count = Math.ceil(len / tile);
  const t = Math.ceil(len / count);
  return Array.from({ length: count - 1 }, (_, i) => (i + 1) * t * scale);
}

/** Mean abs difference per channel on rows/columns within 2 px of a cut line, and elsewhere. */
function seamVsRest(a: RgbImage, b: RgbImage, xs: number[], ys: number[]): { seam: number; rest: number } {
  const near = (v: number, lines: number[]) => lines.some((c) => v >= c - 2 && v < c + 2);
  let seam = 0;
  let seamN = 0;
  let rest = 0;
  let restN = 0;
  for (let y = 0; y < a.height; y++) {
    for (let x = 0; x < a.width; x++) {
      const i = (y * a.width + x) * 3;
      const d =
        Math.abs(a.data[i]! - b.data[i]!) +
        Math.abs(a.data[i + 1]! - b.data[i + 1]!) +
        Math.abs(a.data[i + 2]! - b.data[i + 2]!);
      if (near(x, xs) || near(y, ys)) {
        seam += d;
        seamN += 3;
      } else {
        rest += d;
        restN += 3;
      }
    }
  }
  expect(seamN).toBeGreaterThan(0);
  return { seam: seam / seamN, rest: rest / restN };
}

describe('per-tile resize', () => {
  it('×1, ×2, ×3 and ×6 with 64-px tiles match the model at ×4 then one whole-image Lanczos-3 resize', async () => {
    const lr = await readRgb(FACE);
    const x4 = await bareUpscale(model.path, lr);
    for (const scale of [1, 2, 3, 6] as const) {
      const w = lr.width * scale;
      const h = lr.height * scale;
      const whole = await readRgb(
        await sharp(x4.data, { raw: { width: x4.width, height: x4.height, channels: 3 } })
          .resize(w, h, { kernel: 'lanczos3', fit: 'fill' })
          .png()
          .toBuffer(),
      );
      const tiled = await readRgb(await run({ path: FACE }, { scale, tileSize: 64 }));
      expect([tiled.width, tiled.height]).toEqual([w, h]);
      const db = psnrY(tiled, whole);
      expect(db, `×${scale}`).toBeGreaterThanOrEqual(45);
      const { seam, rest } = seamVsRest(tiled, whole, cuts(lr.width, 64, scale), cuts(lr.height, 64, scale));
      // "No larger than elsewhere", with a quarter of a grey level of slack for rounding noise.
      expect(seam, `×${scale}: seam ${seam} vs elsewhere ${rest} (${db.toFixed(2)} dB)`).toBeLessThanOrEqual(
        rest + 0.25,
      );
    }
  });

  it('resizes alpha with the colour: tiled ×2 RGBA matches the single-tile (whole-image) run', async () => {
    const { data, info } = await sharp(BUTTERFLY).raw().toBuffer({ resolveWithObject: true });
    const rgba = Buffer.alloc(info.width * info.height * 4);
    for (let i = 0; i < info.width * info.height; i++) {
      const x = i % info.width;
      const y = Math.floor(i / info.width);
      data.copy(rgba, i * 4, i * 3, i * 3 + 3);
      // A soft-edged ring: opaque inside, transparent outside, a ramp between (premultiplication matters there).
      const r = Math.hypot(x - 32, y - 32);
      rgba[i * 4 + 3] = Math.round(255 * Math.min(1, Math.max(0, (26 - r) / 6)));
    }
    const png = await sharp(rgba, { raw: { width: 64, height: 64, channels: 4 } })
      .png()
      .toBuffer();
    // tileSize 64 is one tile covering the image: exactly the old whole-image resize.
    const whole = await run({ data: png }, { scale: 2, tileSize: 64 });
    const tiled = await run({ data: png }, { scale: 2, tileSize: 16 });
    const a = await sharp(whole).raw().toBuffer({ resolveWithObject: true });
    const b = await sharp(tiled).raw().toBuffer({ resolveWithObject: true });
    expect([b.info.width, b.info.height, b.info.channels]).toEqual([128, 128, 4]);
    expect(a.info.channels).toBe(4);
    let alphaDiff = 0;
    let colourDiff = 0;
    let colourN = 0;
    for (let i = 0; i < 128 * 128; i++) {
      alphaDiff = Math.max(alphaDiff, Math.abs(a.data[i * 4 + 3]! - b.data[i * 4 + 3]!));
      // Colour under (near-)zero alpha carries no weight and is not compared.
      if (a.data[i * 4 + 3]! >= 16) {
        for (let c = 0; c < 3; c++) colourDiff += Math.abs(a.data[i * 4 + c]! - b.data[i * 4 + c]!);
        colourN += 3;
      }
    }
    expect(alphaDiff).toBeLessThanOrEqual(2);
    expect(colourDiff / colourN).toBeLessThan(0.5);
  });
});

describe('output limit', () => {
  /** 600×600 mid grey with seeded noise: cheap to run at ×1, and its native ×4 (2400²) is over 1024². */
  async function noisyPng(): Promise<Buffer> {
    const side = 600;
    const px = Buffer.alloc(side * side * 3);
    let seed = 42;
    for (let i = 0; i < px.length; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      px[i] = 128 + ((seed >>> 16) % 33) - 16;
    }
    return sharp(px, { raw: { width: side, height: side, channels: 3 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
  }

  it('applies to the requested output only: an input whose native ×4 output is over the limit is upscaled at ×1', async () => {
    const png = await noisyPng();
    const limits = { maxOutputPixels: 1024 * 1024 };
    const out = await run({ data: png }, { scale: 1 as Scale, limits });
    const meta = await sharp(out).metadata();
    expect([meta.width, meta.height]).toEqual([600, 600]);
    const { channels } = await sharp(out).stats();
    for (const c of channels.slice(0, 3)) expect(Math.abs(c.mean - 128)).toBeLessThan(6);
    // The requested output still counts: ×2 is 1200² > 1024².
    await expect(run({ data: png }, { scale: 2, limits })).rejects.toThrow(ImageInputError);
    await expect(run({ data: png }, { scale: 2, limits })).rejects.toThrow(
      /1200×1200 pixels, more than the 1 megapixel output limit/,
    );
  });
});
