/**
 * Inputs and outputs of upscaleImage: every scale, every output format, alpha, orientation, colour types,
 * metadata. Small inputs (Set5 LR, ≤ 86 px) keep each run well under a second.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCALES, type SaveImageAs, type Scale } from '../../engine/contract/index.js';
import { createInference, type Inference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { upscaleImage, type UpscaleJob } from '../../engine/core/pipeline/index.js';
import { psnrY, readRgb } from '../bench/quality.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

const WOMAN = path.join(IMAGES_DIR, 'set5-x4', 'lr', 'woman_LRBI_x4.png'); // 57×86: odd, non-square
const BUTTERFLY = path.join(IMAGES_DIR, 'set5-x4', 'lr', 'butterfly_LRBI_x4.png'); // 64×64
const model = resolveModel('crystal-plus-4x', [MODELS_DIR]);

let inference: Inference;
let tmp: string;
let n = 0;

beforeAll(() => {
  inference = createInference({ executionProvider: 'cpu' });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-formats-'));
});
afterAll(async () => {
  await inference.release();
  rmSync(tmp, { recursive: true, force: true });
});

async function run(input: UpscaleJob['input'], opts: Partial<UpscaleJob> = {}) {
  const ext = opts.format ?? 'png';
  const outputPath = path.join(tmp, `out-${n++}.${ext === 'jpg' ? 'jpg' : ext}`);
  const result = await upscaleImage(
    { input, inputName: 'test image', model, scale: 4, format: 'png', compression: 0, outputPath, ...opts },
    inference,
  );
  const bytes = readFileSync(outputPath);
  return { result, outputPath, bytes, meta: await sharp(bytes).metadata() };
}

describe('sizes and formats', () => {
  it('scales 1–8 give exactly round(w·s) × round(h·s)', async () => {
    for (const scale of SCALES) {
      const { result, meta } = await run({ path: WOMAN }, { scale: scale as Scale });
      expect([meta.width, meta.height]).toEqual([Math.round(57 * scale), Math.round(86 * scale)]);
      expect([result.width, result.height]).toEqual([meta.width, meta.height]);
    }
  });

  it('writes jpg, png and webp that decode back; more compression means smaller jpg/webp', async () => {
    const expected: Record<SaveImageAs, string> = { jpg: 'jpeg', png: 'png', webp: 'webp' };
    const reference = await readRgb((await run({ path: BUTTERFLY })).bytes);
    for (const format of ['jpg', 'png', 'webp'] as const) {
      const best = await run({ path: BUTTERFLY }, { format, compression: 0 });
      const small = await run({ path: BUTTERFLY }, { format, compression: 70 });
      expect(best.meta.format).toBe(expected[format]);
      expect([best.meta.width, best.meta.height]).toEqual([256, 256]);
      expect(best.result.bytes).toBe(best.bytes.length);
      if (format === 'png') {
        // Lossless at any level: identical pixels.
        expect(Buffer.from((await readRgb(small.bytes)).data).equals(Buffer.from(reference.data))).toBe(true);
      } else {
        expect(small.bytes.length).toBeLessThan(best.bytes.length);
        expect(psnrY(await readRgb(best.bytes), reference)).toBeGreaterThan(38);
      }
    }
  });

  it('reports monotonic progress from 0 to 1, tile by tile', async () => {
    const seen: number[] = [];
    await run({ path: BUTTERFLY }, { tileSize: 32, onProgress: (f) => seen.push(f) });
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(1);
    expect(seen.length).toBeGreaterThanOrEqual(6); // 4 tiles + encode + done
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]!);
  });

  it('accepts bytes as well as a path', async () => {
    const { meta } = await run({ data: readFileSync(BUTTERFLY) }, { scale: 2 });
    expect([meta.width, meta.height]).toEqual([128, 128]);
  });
});

describe('input kinds', () => {
  it('upscales alpha with the network and keeps it; drops a fully opaque alpha', async () => {
    const { data, info } = await sharp(BUTTERFLY).raw().toBuffer({ resolveWithObject: true });
    const rgba = Buffer.alloc(info.width * info.height * 4);
    for (let i = 0; i < info.width * info.height; i++) {
      const x = i % info.width;
      const y = Math.floor(i / info.width);
      data.copy(rgba, i * 4, i * 3, i * 3 + 3);
      // A hard-edged disc: transparent outside, opaque inside.
      rgba[i * 4 + 3] = (x - 32) ** 2 + (y - 32) ** 2 < 24 ** 2 ? 255 : 0;
    }
    const png = await sharp(rgba, { raw: { width: 64, height: 64, channels: 4 } })
      .png()
      .toBuffer();
    const { meta, bytes, result } = await run({ data: png }, { format: 'png' });
    expect(meta.hasAlpha).toBe(true);
    const alpha = await sharp(bytes).extractChannel(3).raw().toBuffer();
    expect(alpha[0]).toBeLessThan(8); // corner: outside the disc
    expect(alpha[128 * 256 + 128]).toBeGreaterThan(247); // centre
    const partial = alpha.filter((a) => a > 8 && a < 247).length;
    expect(partial).toBeGreaterThan(0);
    // A network-upscaled hard edge stays sharper than a plain Lanczos resize of the same alpha.
    const lanczos = await sharp(rgba, { raw: { width: 64, height: 64, channels: 4 } })
      .resize(256, 256, { kernel: 'lanczos3' })
      .extractChannel(3)
      .raw()
      .toBuffer();
    expect(partial).toBeLessThan(lanczos.filter((a) => a > 8 && a < 247).length);
    expect(result.warnings).toBeUndefined();

    const webp = await run({ data: png }, { format: 'webp' });
    expect(webp.meta.hasAlpha).toBe(true);
    const jpg = await run({ data: png }, { format: 'jpg' });
    expect(jpg.meta.hasAlpha).toBe(false);
    expect(jpg.result.warnings?.[0]).toMatch(/JPEG cannot store transparency/);

    const opaque = await sharp(BUTTERFLY).ensureAlpha(1).png().toBuffer();
    expect((await sharp(opaque).metadata()).hasAlpha).toBe(true);
    expect((await run({ data: opaque })).meta.hasAlpha).toBe(false);
  });

  it('applies EXIF orientation 6 and writes an upright image with orientation reset', async () => {
    const jpeg = await sharp(WOMAN).jpeg({ quality: 95 }).withMetadata({ orientation: 6 }).toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).toBe(6);
    for (const format of ['jpg', 'png', 'webp'] as const) {
      const { meta, bytes } = await run({ data: jpeg }, { format });
      expect([meta.width, meta.height]).toEqual([86 * 4, 57 * 4]);
      expect(meta.orientation ?? 1).toBe(1);
      // Content is upright: it matches a rotated bicubic enlargement far better than an unrotated one.
      const got = await sharp(bytes).resize(86, 57).removeAlpha().raw().toBuffer();
      const upright = await sharp(WOMAN).rotate(90).raw().toBuffer();
      let d = 0;
      for (let i = 0; i < got.length; i++) d += Math.abs(got[i]! - upright[i]!);
      expect(d / got.length).toBeLessThan(12);
    }
  });

  it('handles grayscale, palette, 16-bit PNG and CMYK JPEG', async () => {
    const rgbRef = await readRgb((await run({ path: BUTTERFLY })).bytes);

    const grey = await run({ data: await sharp(BUTTERFLY).greyscale().png().toBuffer() });
    expect([grey.meta.width, grey.meta.height]).toEqual([256, 256]);
    const g = await readRgb(grey.bytes);
    let rg = 0;
    for (let i = 0; i < g.data.length; i += 3) rg += Math.abs(g.data[i]! - g.data[i + 1]!);
    expect(rg / (g.data.length / 3)).toBeLessThan(3); // still grey

    const palette = await run({ data: await sharp(BUTTERFLY).png({ palette: true, colours: 256 }).toBuffer() });
    expect([palette.meta.width, palette.meta.height]).toEqual([256, 256]);
    expect(psnrY(await readRgb(palette.bytes), rgbRef)).toBeGreaterThan(25);

    const png16 = await sharp(BUTTERFLY).toColourspace('rgb16').png().toBuffer();
    expect((await sharp(png16).metadata()).depth).toBe('ushort');
    const deep = await run({ data: png16 }, { format: 'png' });
    expect(deep.meta.depth).toBe('ushort'); // 16 bits kept into the PNG output
    expect(deep.meta.icc).toBeDefined();
    expect(psnrY(await readRgb(deep.bytes), rgbRef)).toBeGreaterThan(45);
    const deepJpg = await run({ data: png16 }, { format: 'jpg' });
    expect(deepJpg.meta.depth).toBe('uchar');

    const cmyk = await sharp(BUTTERFLY).toColourspace('cmyk').jpeg({ quality: 95 }).toBuffer();
    expect((await sharp(cmyk).metadata()).space).toBe('cmyk');
    const fromCmyk = await run({ data: cmyk }, { format: 'jpg' });
    expect(fromCmyk.meta.space).toBe('srgb');
    expect(psnrY(await readRgb(fromCmyk.bytes), rgbRef)).toBeGreaterThan(25);
  });

  it('keeps EXIF in every format and tags the output sRGB, converting a Display P3 input', async () => {
    const input = await sharp(BUTTERFLY)
      .withIccProfile('p3')
      .withExif({ IFD0: { Copyright: 'Crisp test 42', Orientation: '1' } })
      .jpeg({ quality: 95 })
      .toBuffer();
    const srgb = (await sharp(await sharp(BUTTERFLY).withIccProfile('srgb').png().toBuffer()).metadata()).icc;
    const p3 = (await sharp(input).metadata()).icc;
    expect(srgb).toBeDefined();
    expect(p3?.equals(srgb!)).toBe(false);
    // What the pixels should look like once converted to sRGB (sharp applies the embedded profile).
    const converted = await readRgb(await sharp(input).resize(256, 256, { kernel: 'lanczos3' }).png().toBuffer());
    const unconverted = await readRgb(
      await sharp(input, { ignoreIcc: true }).resize(256, 256, { kernel: 'lanczos3' }).png().toBuffer(),
    );
    for (const format of ['jpg', 'png', 'webp'] as const) {
      const { meta, bytes } = await run({ data: input }, { format });
      expect(meta.exif?.toString('latin1'), format).toContain('Crisp test 42');
      expect(meta.icc?.equals(srgb!), format).toBe(true);
      const got = await readRgb(bytes);
      expect(psnrY(got, converted), format).toBeGreaterThan(psnrY(got, unconverted));
    }
  });
});
