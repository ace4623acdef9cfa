/**
 * Decode: any accepted input → upright sRGB pixels (8- or 16-bit) plus an alpha plane when it matters.
 * sharp converts an embedded ICC profile (and CMYK) to sRGB by default, .rotate() applies EXIF orientation,
 * and grayscale / palette inputs are widened to RGB by toColourspace.
 */
import { open } from 'node:fs/promises';
import sharp, { type OutputInfo, type Sharp } from 'sharp';
import { ImageInputError } from './errors.js';
import type { ImageInfo, ImageLimits, ImageSource, InputFormat } from './probe.js';
import { allocRaster, maxValue, type BitDepth, type PixelArray, type Raster } from './raster.js';

export interface DecodedImage {
  /** Interleaved RGB, channels = 3. */
  rgb: Raster;
  /** Alpha plane (channels = 1), only when some pixel is not fully opaque. */
  alpha?: Raster;
  /** The input's EXIF block as sharp reports it ("Exif\0\0" + TIFF), to carry over to the output. */
  exif?: Buffer;
  info: ImageInfo;
}

export async function decodeImage(
  input: ImageSource,
  name: string,
  info: ImageInfo,
  limits: Pick<ImageLimits, 'maxInputPixels'>,
): Promise<DecodedImage> {
  const sixteen = info.depth === 16;
  let data: Buffer;
  let out: OutputInfo;
  let exif: Buffer | undefined;
  try {
    const img = openInput(input, limits);
    exif = (await img.metadata()).exif;
    const res = await uprightSrgb(img, sixteen)
      .raw(sixteen ? { depth: 'ushort' } : {})
      .toBuffer({ resolveWithObject: true });
    data = res.data;
    out = res.info;
  } catch (e) {
    throw await decodeFailure(e, input, name, info.format);
  }
  const depth: BitDepth = sixteen ? 16 : 8;
  const src = sixteen
    ? new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2)
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const { rgb, alpha, translucent } = splitChannels(src, out.width, out.height, out.channels, depth);
  // A fully opaque alpha channel carries nothing; dropping it halves the inference work.
  return { rgb, ...(alpha && translucent ? { alpha } : {}), ...(exif ? { exif } : {}), info };
}

export function openInput(input: ImageSource, limits: Pick<ImageLimits, 'maxInputPixels'>): Sharp {
  // failOn 'warning' (the default) would also fail on harmless libpng/libjpeg warnings; truncation is what matters.
  return sharp('path' in input ? input.path : input.data, {
    limitInputPixels: limits.maxInputPixels,
    failOn: 'truncated',
  });
}

/** The decode every path shares, so streamed and in-memory jobs see the same pixels. */
export function uprightSrgb(img: Sharp, sixteen: boolean): Sharp {
  return img.rotate().toColourspace(sixteen ? 'rgb16' : 'srgb');
}

/**
 * Interleaved samples as sharp gives them (grey, grey+alpha, RGB or RGBA) → an RGB raster and an alpha plane.
 * `translucent` says whether any alpha sample is below opaque.
 */
export function splitChannels(
  src: PixelArray,
  width: number,
  height: number,
  channels: number,
  depth: BitDepth,
): { rgb: Raster; alpha?: Raster; translucent: boolean } {
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
  return { rgb, ...(alpha ? { alpha } : {}), translucent };
}

/** The user's sentence for a decode failure: truncated or corrupt, and what to do. */
export async function decodeFailure(
  e: unknown,
  input: ImageSource,
  name: string,
  format: InputFormat,
): Promise<ImageInputError> {
  const truncated =
    (e instanceof Error && /truncat|premature|end of (file|data)/i.test(e.message)) ||
    (await looksTruncated(input, format).catch(() => false));
  const why = truncated ? 'the file is truncated (incomplete download or copy?)' : 'the file is corrupt';
  return new ImageInputError(
    name,
    `"${name}" could not be decoded: ${why}. Re-export or re-download the image and try again.`,
    'damaged-image',
    why,
  );
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
