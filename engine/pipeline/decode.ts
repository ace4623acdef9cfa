/**
 * Decode: any accepted input → upright sRGB pixels (8- or 16-bit) plus an alpha plane when it matters.
 * sharp converts an embedded ICC profile (and CMYK) to sRGB by default, .rotate() applies EXIF orientation,
 * and grayscale / palette inputs are widened to RGB by toColourspace.
 */
import { open } from 'node:fs/promises';
import sharp, { type OutputInfo } from 'sharp';
import { ImageInputError } from './errors.js';
import type { ImageInfo, ImageLimits, ImageSource, InputFormat } from './probe.js';
import { allocRaster, maxValue, type Raster } from './raster.js';

export interface DecodedImage {
  /** Interleaved RGB, channels = 3. */
  rgb: Raster;
  /** Alpha plane (channels = 1), only when some pixel is not fully opaque. */
  alpha?: Raster;
  /** The input's EXIF block as sharp reports it ("Exif\0\0" + TIFF), to carry over to the output. */
  exif?: Buffer;
  info: ImageInfo;
}

export async function decodeImage(input: ImageSource, name: string, info: ImageInfo, limits: Pick<ImageLimits, 'maxInputPixels'>): Promise<DecodedImage> {
  const sixteen = info.depth === 16;
  let data: Buffer;
  let out: OutputInfo;
  let exif: Buffer | undefined;
  try {
    // failOn 'warning' (the default) would also fail on harmless libpng/libjpeg warnings; truncation is what matters.
    const img = sharp('path' in input ? input.path : input.data, { limitInputPixels: limits.maxInputPixels, failOn: 'truncated' });
    exif = (await img.metadata()).exif;
    const res = await img
      .rotate()
      .toColourspace(sixteen ? 'rgb16' : 'srgb')
      .raw(sixteen ? { depth: 'ushort' } : {})
      .toBuffer({ resolveWithObject: true });
    data = res.data;
    out = res.info;
  } catch (e) {
    const truncated = (e instanceof Error && /truncat|premature|end of (file|data)/i.test(e.message)) || (await looksTruncated(input, info.format));
    const why = truncated ? 'the file is truncated (incomplete download or copy?)' : 'the file is corrupt';
    throw new ImageInputError(name, `"${name}" could not be decoded: ${why}. Re-export or re-download the image and try again.`);
  }

  const { width, height, channels } = out;
  const depth = sixteen ? 16 : 8;
  const src = sixteen ? new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const rgb = allocRaster(width, height, 3, depth);
  const hasAlpha = channels === 2 || channels === 4;
  const colour = hasAlpha ? channels - 1 : channels;
  const alpha = hasAlpha ? allocRaster(width, height, 1, depth) : undefined;
  const opaque = maxValue(depth);
  let translucent = false;
  for (let i = 0, p = 0; i < width * height; i++, p += channels) {
    const r = src[p] ?? 0;
    rgb.data[i * 3] = r;
    rgb.data[i * 3 + 1] = colour === 3 ? (src[p + 1] ?? 0) : r;
    rgb.data[i * 3 + 2] = colour === 3 ? (src[p + 2] ?? 0) : r;
    if (alpha) {
      const a = src[p + colour] ?? opaque;
      alpha.data[i] = a;
      if (a !== opaque) translucent = true;
    }
  }
  // A fully opaque alpha channel carries nothing; dropping it halves the inference work.
  return { rgb, ...(alpha && translucent ? { alpha } : {}), ...(exif ? { exif } : {}), info };
}

/** libpng/libjpeg report a cut-off file as a generic read error; the container's end marker tells. */
async function looksTruncated(input: ImageSource, format: InputFormat): Promise<boolean> {
  let head: Buffer;
  let tail: Buffer;
  let size: number;
  if ('path' in input) {
    const fh = await open(input.path, 'r');
    try {
      size = (await fh.stat()).size;
      head = Buffer.alloc(Math.min(12, size));
      tail = Buffer.alloc(Math.min(12, size));
      await fh.read(head, 0, head.length, 0);
      await fh.read(tail, 0, tail.length, size - tail.length);
    } finally {
      await fh.close();
    }
  } else {
    const b = Buffer.from(input.data.buffer, input.data.byteOffset, input.data.byteLength);
    size = b.length;
    head = b.subarray(0, 12);
    tail = b.subarray(Math.max(0, size - 12));
  }
  if (format === 'png') return !tail.subarray(4, 8).equals(Buffer.from('IEND', 'latin1'));
  if (format === 'jpeg') return !(tail.at(-2) === 0xff && tail.at(-1) === 0xd9);
  return head.length >= 8 && head.readUInt32LE(4) + 8 > size;
}
