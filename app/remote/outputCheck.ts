/**
 * Checks a downloaded output before it may replace anything on disk: the byte count the service declared,
 * and that sharp decodes it to the dimensions the service declared.
 */
import sharp, { type Metadata } from 'sharp';
import { type FileData, CrispError } from '../../engine/contract/index.js';
import type { Dimensions } from '../backends/backend.js';

export async function checkOutput(
  bytes: Uint8Array,
  file: Pick<FileData, 'fileSize' | 'dimensions' | 'fileName'>,
): Promise<Dimensions> {
  if (file.fileSize > 0 && bytes.length !== file.fileSize) {
    throw new CrispError(
      'invalid-output',
      `The downloaded ${file.fileName} has ${bytes.length} bytes; the service said ${file.fileSize}.`,
    );
  }
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
    // metadata() reads headers only; a stats pass decodes every pixel, catching a truncated body.
    await sharp(bytes, { limitInputPixels: false }).stats();
  } catch {
    throw new CrispError('invalid-output', `The downloaded ${file.fileName} is not a readable image.`);
  }
  const dims = { width: meta.width ?? 0, height: meta.height ?? 0 };
  if (file.dimensions && (dims.width !== file.dimensions.width || dims.height !== file.dimensions.height)) {
    throw new CrispError(
      'invalid-output',
      `The downloaded ${file.fileName} is ${dims.width}×${dims.height}; the service said ${file.dimensions.width}×${file.dimensions.height}.`,
    );
  }
  return dims;
}
