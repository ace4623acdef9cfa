/**
 * Encode: raster → JPEG / PNG / WebP bytes, tagged sRGB, with the input's EXIF carried over.
 *
 * compression (0–100, 0 = best quality):
 *   jpg, webp: quality = 100 − compression (at least 1); JPEG keeps full-resolution chroma (4:4:4) at
 *              quality ≥ 90, where 4:2:0 subsampling would be the largest visible loss.
 *   png:       always lossless; zlib level = 1 + round(compression · 8 / 100), so 0 → 1 (fastest, largest)
 *              and 100 → 9 (slowest, smallest).
 * Only PNG keeps 16-bit samples; JPEG and WebP are 8-bit formats.
 */
import sharp from 'sharp';
import type { SaveImageAs } from '../contract/index.js';
import { injectExif, tagPngSrgb } from './metadata.js';
import { allocRaster, rawInput, type Raster } from './raster.js';

export interface EncodeOptions {
  format: SaveImageAs;
  compression: number;
  exif?: Buffer;
}

export interface EncodedImage {
  data: Buffer;
  width: number;
  height: number;
  warnings: string[];
}

export function jpegQuality(compression: number): number {
  return Math.min(100, Math.max(1, Math.round(100 - compression)));
}

export function pngLevel(compression: number): number {
  return 1 + Math.round((Math.min(100, Math.max(0, compression)) * 8) / 100);
}

function to8bit(r: Raster): Raster {
  if (r.depth === 8) return r;
  const out = allocRaster(r.width, r.height, r.channels, 8);
  // 65535 / 255 = 257 exactly: v / 257 maps the 16-bit range onto the 8-bit one.
  for (let i = 0; i < r.data.length; i++) out.data[i] = Math.round((r.data[i] ?? 0) / 257);
  return out;
}

export async function encodeRaster(raster: Raster, opts: EncodeOptions): Promise<EncodedImage> {
  const warnings: string[] = [];
  const r = opts.format === 'png' ? raster : to8bit(raster);
  const { input, raw } = rawInput(r);
  let img = sharp(input, { raw, limitInputPixels: false });
  let data: Buffer;
  if (opts.format === 'png') {
    const level = pngLevel(opts.compression);
    if (r.depth === 16) {
      img = img.toColourspace(r.channels >= 3 ? 'rgb16' : 'grey16');
      data = await tagPngSrgb(await img.png({ compressionLevel: level }).toBuffer());
    } else {
      data = await img.withIccProfile('srgb').png({ compressionLevel: level }).toBuffer();
    }
  } else if (opts.format === 'jpg') {
    if (r.channels === 4) {
      img = img.flatten({ background: '#ffffff' });
      warnings.push('JPEG cannot store transparency: transparent areas were filled with white. Choose PNG or WebP to keep them.');
    }
    const quality = jpegQuality(opts.compression);
    data = await img.withIccProfile('srgb').jpeg({ quality, chromaSubsampling: quality >= 90 ? '4:4:4' : '4:2:0' }).toBuffer();
  } else {
    data = await img.withIccProfile('srgb').webp({ quality: jpegQuality(opts.compression), alphaQuality: 100 }).toBuffer();
  }
  if (opts.exif) data = injectExif(data, opts.format, opts.exif, r.width, r.height);
  return { data, width: r.width, height: r.height, warnings };
}
