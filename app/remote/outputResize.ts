/**
 * Cloud with an exact size: the service upscales at the smallest contract scale that reaches the size
 * (cloudScaleFor), and its checked download is resampled here once, Lanczos-3, to exactly the size, in the
 * format and compression the task asked for, keeping the service output's metadata.
 */
import sharp from 'sharp';
import {
  CrispError,
  MAX_MODEL_SCALE,
  scaleToReach,
  targetSize,
  type SaveImageAs,
  type Scale,
  type Size,
  type SizeRequest,
} from '../../engine/contract/index.js';
import { loadPipeline } from '../../engine/core/index.js';

/** An input's upright size from its header (EXIF orientations 5–8 swap the axes), as the engine reads it. */
export async function uprightSize(input: string | Uint8Array): Promise<Size> {
  const meta = await sharp(input, { limitInputPixels: false }).metadata();
  const swap = (meta.orientation ?? 1) >= 5 && (meta.orientation ?? 1) <= 8;
  return swap ? { width: meta.height, height: meta.width } : { width: meta.width, height: meta.height };
}

/** The target of a w×h image and the contract scale a service runs to reach it (the smallest that does). */
export function cloudScaleFor(input: Size, size: SizeRequest, name = 'the image'): { scale: Scale; target: Size } {
  const target = targetSize(input.width, input.height, size);
  const scale = scaleToReach(input.width, input.height, target);
  if (scale > MAX_MODEL_SCALE) {
    throw new CrispError(
      'bad-request',
      `"${name}" is ${input.width}×${input.height} pixels: reaching ${target.width}×${target.height} would take ×${scale}, more than the ×${MAX_MODEL_SCALE} a service upscales. Choose a smaller size.`,
    );
  }
  return { scale: scale as Scale, target };
}

/** The downloaded image resampled to exactly `target` (unchanged when it already is). */
export async function resizeToTarget(
  bytes: Uint8Array,
  target: Size,
  format: SaveImageAs,
  compression: number,
): Promise<Uint8Array> {
  const { jpegQuality, pngLevel } = await loadPipeline();
  const img = sharp(bytes, { limitInputPixels: false }).autoOrient();
  const meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  if (meta.width === target.width && meta.height === target.height && (meta.orientation ?? 1) === 1) return bytes;
  const resized = img.resize(target.width, target.height, { kernel: 'lanczos3', fit: 'fill' }).keepMetadata();
  const quality = jpegQuality(compression);
  const encoded =
    format === 'png'
      ? resized.png({ compressionLevel: pngLevel(compression) })
      : format === 'jpg'
        ? resized.jpeg({ quality, chromaSubsampling: quality >= 90 ? '4:4:4' : '4:2:0' })
        : resized.webp({ quality, alphaQuality: 100 });
  return new Uint8Array(await encoded.toBuffer());
}
