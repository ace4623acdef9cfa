/**
 * Header-only checks, run before any pixel is decoded: what the image is, and whether input and output fit
 * the limits. sharp's metadata() reads the header only, so a file claiming 100000×100000 costs nothing.
 */
import { stat } from 'node:fs/promises';
import sharp, { type Metadata } from 'sharp';
import {
  FORMAT_MAX_SIDE,
  MAX_MODEL_SCALE,
  describeSizeRequest,
  modelScaleFor,
  scaleToReach,
  targetSize,
  type SaveImageAs,
  type SizeRequest,
} from '../../contract/index.js';
import { ImageInputError } from './errors.js';
import { MAX_INPUT_PIXELS, MAX_OUTPUT_PIXELS } from './pixelLimits.js';
import type { BitDepth } from './raster.js';

export type ImageSource = { path: string } | { data: Uint8Array };
export type InputFormat = 'jpeg' | 'png' | 'webp';

export interface ImageLimits {
  /** Largest input, in pixels, that will be decoded. */
  maxInputPixels: number;
  /** Largest output, in pixels, that will be produced (streamed to disk above streamAboveBytes). */
  maxOutputPixels: number;
  /** Outputs whose raster (width·height·channels·bytes) is larger than this stream their tiles to disk. */
  streamAboveBytes: number;
  /** Free disk kept untouched on top of a job's temp raster and output. */
  diskReserveBytes: number;
}

/**
 * Large outputs stream to a disk raster, so memory does not grow with them; the temp disk does (3 bytes a
 * pixel for 8-bit RGB, see budget.ts, checked against the free space before any work). The pixel limits and
 * why the input's is the output's: pixelLimits.ts.
 */
export const DEFAULT_LIMITS: ImageLimits = {
  maxInputPixels: MAX_INPUT_PIXELS,
  maxOutputPixels: MAX_OUTPUT_PIXELS,
  streamAboveBytes: 64 * 1024 * 1024,
  diskReserveBytes: 64 * 1024 * 1024,
};

export interface ImageInfo {
  /** Upright dimensions (EXIF orientation applied). */
  width: number;
  height: number;
  format: InputFormat;
  hasAlpha: boolean;
  channels: number;
  depth: BitDepth;
  /** libvips interpretation, e.g. 'srgb', 'b-w', 'cmyk', 'rgb16'. */
  space: string;
  orientation: number;
  hasIcc: boolean;
  hasExif: boolean;
  isPalette: boolean;
}

const ACCEPTED = 'Choose a JPEG, PNG or WebP image.';

export async function probeImage(
  input: ImageSource,
  name: string,
  limitsIn: Partial<ImageLimits> = {},
): Promise<ImageInfo> {
  const limits = { ...DEFAULT_LIMITS, ...limitsIn };
  if ('path' in input) {
    let size: number;
    try {
      size = (await stat(input.path)).size;
    } catch {
      throw new ImageInputError(name, `"${name}" could not be opened: the file does not exist or cannot be read.`);
    }
    if (size === 0) throw new ImageInputError(name, `"${name}" is empty (0 bytes). ${ACCEPTED}`);
  } else if (input.data.byteLength === 0) {
    throw new ImageInputError(name, `"${name}" is empty (0 bytes). ${ACCEPTED}`);
  }

  let meta: Metadata;
  try {
    meta = await sharp('path' in input ? input.path : input.data, { limitInputPixels: false }).metadata();
  } catch {
    throw new ImageInputError(
      name,
      `"${name}" is not a readable image: the file is corrupt or not an image. ${ACCEPTED}`,
    );
  }
  const format = meta.format as string;
  if (format !== 'jpeg' && format !== 'png' && format !== 'webp') {
    throw new ImageInputError(
      name,
      `"${name}" is a ${format.toUpperCase()} file, which Crisp cannot upscale. ${ACCEPTED}`,
    );
  }
  if ((meta.pages ?? 1) > 1) {
    // Only the first frame would be decoded: refused rather than silently upscaled (and charged) as one picture.
    throw new ImageInputError(
      name,
      `"${name}" is animated (${meta.pages} frames): Crisp upscales still images. Export the frame you want as a PNG or JPEG and add that.`,
    );
  }
  const orientation = meta.orientation ?? 1;
  // Orientations 5–8 swap the axes.
  const swap = orientation >= 5 && orientation <= 8;
  const width = swap ? meta.height : meta.width;
  const height = swap ? meta.width : meta.height;
  if (!(width > 0 && height > 0)) {
    throw new ImageInputError(
      name,
      `"${name}" has no pixels (its header says ${meta.width}×${meta.height}). ${ACCEPTED}`,
    );
  }
  if (width * height > limits.maxInputPixels) {
    throw new ImageInputError(
      name,
      `"${name}" is too large: ${width}×${height} pixels is more than the ${formatMp(limits.maxInputPixels)} limit. ` +
        'Reduce the image size before upscaling.',
    );
  }
  return {
    width,
    height,
    format,
    hasAlpha: meta.hasAlpha,
    channels: meta.channels,
    depth: meta.depth === 'ushort' || meta.depth === 'short' ? 16 : 8,
    space: meta.space,
    orientation,
    hasIcc: meta.icc !== undefined,
    hasExif: meta.exif !== undefined,
    isPalette: meta.isPalette ?? false,
  };
}

export interface OutputSize {
  width: number;
  height: number;
}

export interface OutputCheckOptions {
  /** The file's name for the message; default "the image". */
  name?: string;
  maxOutputPixels?: number;
}

/** Refuses outputs the chosen format cannot hold, or that exceed the output pixel limit. */
export function checkOutputFits(
  width: number,
  height: number,
  scale: number,
  format: SaveImageAs,
  opts: OutputCheckOptions = {},
): OutputSize {
  const name = opts.name ?? 'the image';
  const maxOutputPixels = opts.maxOutputPixels ?? DEFAULT_LIMITS.maxOutputPixels;
  const out = { width: Math.round(width * scale), height: Math.round(height * scale) };
  const maxSide = FORMAT_MAX_SIDE[format];
  if (out.width > maxSide || out.height > maxSide) {
    const alt = format === 'webp' ? ' Choose PNG or JPG, or a smaller scale.' : ' Choose PNG, or a smaller scale.';
    throw new ImageInputError(
      name,
      `"${name}" at ×${scale} would be ${out.width}×${out.height} pixels, but ${format.toUpperCase()} holds at most ${maxSide} pixels a side.${alt}`,
    );
  }
  if (out.width * out.height > maxOutputPixels) {
    throw new ImageInputError(
      name,
      `"${name}" at ×${scale} would be ${out.width}×${out.height} pixels, more than the ${formatMp(maxOutputPixels)} output limit. Choose a smaller scale.`,
    );
  }
  return out;
}

/** The model pass and the final size of a job: equal sizes when the job asked for a scale. */
export interface OutputPlan {
  /** The integer scale the model's tiles are stitched at. */
  scale: number;
  /** The stitched raster: input × scale. */
  stitched: OutputSize;
  /** The written image: the asked-for size, or the stitched raster itself. */
  final: OutputSize;
}

/**
 * The output of a w×h input: with a size request (geometry.ts), the exact target and the model scale that
 * reaches it (the native scale when it does, so one final Lanczos-3 resample lands on the size); else ×scale.
 * Both the stitched raster and the final image must fit the format and the output pixel limit: refused here,
 * from the header, naming the limit.
 */
export function planOutput(
  width: number,
  height: number,
  scale: number,
  format: SaveImageAs,
  opts: OutputCheckOptions & { size?: SizeRequest; nativeScale?: number } = {},
): OutputPlan {
  if (!opts.size) {
    const out = checkOutputFits(width, height, scale, format, opts);
    return { scale, stitched: out, final: out };
  }
  const name = opts.name ?? 'the image';
  const final = targetSize(width, height, opts.size);
  const asked = describeSizeRequest(opts.size);
  const maxSide = FORMAT_MAX_SIDE[format];
  const maxOutputPixels = opts.maxOutputPixels ?? DEFAULT_LIMITS.maxOutputPixels;
  if (final.width > maxSide || final.height > maxSide) {
    const alt = format === 'webp' ? ' Choose PNG or JPG, or a smaller size.' : ' Choose PNG, or a smaller size.';
    throw new ImageInputError(
      name,
      `"${name}" at ${asked} would be ${final.width}×${final.height} pixels, but ${format.toUpperCase()} holds at most ${maxSide} pixels a side.${alt}`,
    );
  }
  if (final.width * final.height > maxOutputPixels) {
    throw new ImageInputError(
      name,
      `"${name}" at ${asked} would be ${final.width}×${final.height} pixels, more than the ${formatMp(maxOutputPixels)} output limit. Choose a smaller size.`,
    );
  }
  let s = modelScaleFor(width, height, final, opts.nativeScale ?? scale);
  // A native result over the limit: the smallest scale that reaches the size (tiles resized down) may fit.
  const need = scaleToReach(width, height, final);
  if (s > need && width * s * height * s > maxOutputPixels) s = need;
  if (s > MAX_MODEL_SCALE) {
    throw new ImageInputError(
      name,
      `"${name}" is ${width}×${height} pixels: reaching ${final.width}×${final.height} (${asked}) would take ×${s}, more than the ×${MAX_MODEL_SCALE} Crisp upscales in one pass. Choose a smaller size.`,
    );
  }
  const stitched = { width: width * s, height: height * s };
  if (stitched.width * stitched.height > maxOutputPixels) {
    throw new ImageInputError(
      name,
      `"${name}" at ${asked} is made from the model's ×${s} result, ${stitched.width}×${stitched.height} pixels, more than the ${formatMp(maxOutputPixels)} output limit. Choose a smaller size.`,
    );
  }
  return { scale: s, stitched, final };
}

/**
 * Double upscale (two passes of the same ×scale): the first pass's output is the second pass's input, so it
 * must stay within the decode limit (maxInputPixels), and the final image within the output limits. Checked
 * from the input's header, before any pass starts. Answers the final size.
 */
export function checkPassesFit(
  width: number,
  height: number,
  scale: number,
  passes: 1 | 2,
  format: SaveImageAs,
  opts: OutputCheckOptions & { maxInputPixels?: number } = {},
): OutputSize {
  if (passes === 1) return checkOutputFits(width, height, scale, format, opts);
  const name = opts.name ?? 'the image';
  const total = scale * scale;
  const mid = { width: width * scale, height: height * scale };
  const out = { width: width * total, height: height * total };
  const maxInput = opts.maxInputPixels ?? DEFAULT_LIMITS.maxInputPixels;
  const maxOutput = opts.maxOutputPixels ?? DEFAULT_LIMITS.maxOutputPixels;
  const maxSide = FORMAT_MAX_SIDE[format];
  const twice = `"${name}" upscaled twice at ×${scale} (×${total} in all)`;
  const instead = ' Choose one pass or a smaller scale.';
  if (out.width > maxSide || out.height > maxSide) {
    throw new ImageInputError(
      name,
      `${twice} would be ${out.width}×${out.height} pixels, but ${format.toUpperCase()} holds at most ${maxSide} pixels a side.${instead}`,
    );
  }
  if (out.width * out.height > maxOutput) {
    throw new ImageInputError(
      name,
      `${twice} would be ${out.width}×${out.height} pixels, more than the ${formatMp(maxOutput)} output limit.${instead}`,
    );
  }
  if (mid.width * mid.height > maxInput) {
    throw new ImageInputError(
      name,
      `${twice}: the first pass's ${mid.width}×${mid.height} result is more than the ${formatMp(maxInput)} an image may have to be upscaled.${instead}`,
    );
  }
  return out;
}

function formatMp(pixels: number): string {
  return `${Math.round(pixels / 1e6)} megapixel`;
}
