/**
 * The input check every upscale passes before any work starts, wherever it comes from (a service task's
 * files and fetched URLs, the desktop's local job): the bytes are identified by their magic numbers, the
 * header is read, and the output and its temp raster must fit the limits and the free disk. A refusal is
 * the contract's 400 (413 for a file over the size limit) with a message naming the file, so a local
 * refusal reads exactly like a server's; the 400 keeps the refusal itself, with its own catalog code and
 * the file's name, as its cause (errors.refused), which a caller that is no server reports instead
 * (refusalBehind: the desktop's and the CLI's local engine).
 */
import { open } from 'node:fs/promises';
import path from 'node:path';
import {
  CrispError,
  errors,
  hasErrorCode,
  type ContractError,
  type SizeRequest,
  type TaskSettings,
} from '../contract/index.js';
import {
  checkDiskBudget,
  estimateJob,
  planOutput,
  probeImage,
  type ImageInfo,
  type ImageLimits,
  type OutputSize,
} from './pipeline/index.js';
import { sniffImageType } from './pipeline/imageSniff.js';

/** The image limits plus the largest file accepted, in bytes. */
export interface InputLimits extends ImageLimits {
  maxFileSize: number;
}

/**
 * What the output will be: its scale (or exact size, with the model's native scale) and format decide the
 * output's size and its raster's.
 */
export type InputTarget = Pick<TaskSettings, 'scale' | 'saveImageAs'> & { size?: SizeRequest; nativeScale?: number };

export interface CheckedInput {
  path: string;
  originalFileName: string;
  dimensions: { width: number; height: number };
}

/** 413 for a file over the size limit, naming it. */
export function fileTooLarge(name: string, maxFileSize: number): ContractError {
  return errors.payloadTooLarge(`${name} is larger than the limit of ${Math.round(maxFileSize / 1048576)} MiB`);
}

/**
 * Identifies the bytes and reads the header: throws 400 with a message naming the file. `outputDir` is where
 * the output and its temp raster will be written (default: the input's folder), whose free disk is measured.
 */
export async function checkedInput(
  file: string,
  originalFileName: string,
  target: InputTarget,
  limits: InputLimits,
  outputDir?: string,
): Promise<CheckedInput> {
  const fh = await open(file, 'r');
  let head: Buffer;
  let size: number;
  try {
    size = (await fh.stat()).size;
    head = Buffer.alloc(16);
    await fh.read(head, 0, 16, 0);
  } finally {
    await fh.close();
  }
  const name = { name: originalFileName };
  if (size === 0)
    throw errors.refused(new CrispError('unusable-image', `${originalFileName} is empty`, { params: name }));
  if (size > limits.maxFileSize) throw fileTooLarge(originalFileName, limits.maxFileSize);
  if (!sniffImageType(head))
    throw errors.refused(
      new CrispError('not-an-image', `${originalFileName} is not a JPG, PNG or WEBP image`, { params: name }),
    );
  try {
    const info = await probeImage({ path: file }, originalFileName, { maxInputPixels: limits.maxInputPixels });
    const { stitched: out } = planOutput(info.width, info.height, target.scale, target.saveImageAs, {
      maxOutputPixels: limits.maxOutputPixels,
      name: originalFileName,
      ...(target.size ? { size: target.size, nativeScale: target.nativeScale ?? target.scale } : {}),
    });
    await checkDisk(outputDir ?? path.dirname(file), originalFileName, info, out, target, limits);
    return { path: file, originalFileName, dimensions: { width: info.width, height: info.height } };
  } catch (e) {
    if (hasErrorCode(e, 'unusable-image', 'damaged-image', 'not-enough-space'))
      throw errors.refused(new CrispError(e.code, e.message, { params: { ...e.params, ...name }, cause: e }));
    throw e;
  }
}

/**
 * An image whose temp raster and output cannot fit the free disk of the output's folder (the temp rasters go
 * there too) is refused here, before any work; the run checks again before decoding.
 */
async function checkDisk(
  dir: string,
  name: string,
  info: ImageInfo,
  out: OutputSize,
  target: InputTarget,
  limits: InputLimits,
): Promise<void> {
  const budget = estimateJob(
    {
      inWidth: info.width,
      inHeight: info.height,
      hasAlpha: info.hasAlpha,
      outDepth: info.depth === 16 && target.saveImageAs === 'png' ? 16 : 8,
      outWidth: out.width,
      outHeight: out.height,
      format: target.saveImageAs,
      tileSize: 512,
    },
    'auto',
    limits.streamAboveBytes,
  );
  // The budget's one refusal (its sentence names the sizes and the folder) is not-enough-space.
  await checkDiskBudget({ name, budget, outputDir: dir, tempDir: dir, reserveBytes: limits.diskReserveBytes });
}
