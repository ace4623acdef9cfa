/**
 * Brings a start-task's sources into the task: direct files are copied into the task folder, uploaded
 * files are resolved to the caller's completed uploads, URLs are recorded to be fetched when the task
 * runs. Every image whose bytes are at hand is identified and its header checked now, so a text file
 * named .jpg, an empty file or a 100000×100000 header is refused with 400 before anything is queued.
 */
import { copyFile, mkdir, open, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Caller } from '../api.js';
import { errors, type StartTaskRequest, type TaskSettings } from '../contract/index.js';
import type { EngineLimits } from '../limits.js';
import {
  checkDiskBudget,
  checkOutputFits,
  estimateJob,
  ImageInputError,
  probeImage,
  type ImageInfo,
  type OutputSize,
} from '../pipeline/index.js';
import { sniffImageType } from '../storage/imageSniff.js';
import type { Uploads } from '../uploads/uploadStore.js';
import type { TaskInput } from './taskTypes.js';

export async function materializeInputs(
  req: StartTaskRequest,
  caller: Caller,
  inputsDir: string,
  uploads: Uploads,
  limits: EngineLimits,
  /** move: take the files instead of copying them; outputDir: where the output (and its temp raster) will go, when not the task folder. */
  opts: { move?: boolean; outputDir?: string | undefined } = {},
): Promise<TaskInput[]> {
  await mkdir(inputsDir, { recursive: true });
  if (req.source === 'urls') {
    return req.urls.map((url) => ({ url, originalFileName: nameFromUrl(url) }));
  }
  if (req.source === 'files') {
    const inputs: TaskInput[] = [];
    for (const [i, ref] of req.files.entries()) {
      const up = await uploads.resolveCompleted(caller, ref.path, i, path.join(inputsDir, String(i)));
      inputs.push(await checkedInput(up.absolutePath, up.originalFileName, req, limits, opts.outputDir));
    }
    return inputs;
  }
  const inputs: TaskInput[] = [];
  for (const [i, f] of req.file.entries()) {
    const target = path.join(inputsDir, String(i));
    if (f.data instanceof Uint8Array) {
      if (f.data.length > limits.maxFileSize) throw tooLarge(f.originalFileName, limits);
      await writeFile(target, f.data);
    } else {
      const src = f.data.path;
      await (opts.move ? rename(src, target).catch(() => copyFile(src, target)) : copyFile(src, target)).catch(
        (e: NodeJS.ErrnoException) => {
          throw errors.badRequest(`${f.originalFileName} cannot be read (${e.code ?? e.message})`);
        },
      );
    }
    inputs.push(await checkedInput(target, f.originalFileName, req, limits, opts.outputDir));
  }
  return inputs;
}

function tooLarge(name: string, limits: EngineLimits) {
  return errors.payloadTooLarge(`${name} is larger than the limit of ${Math.round(limits.maxFileSize / 1048576)} MiB`);
}

/** Identifies the bytes and reads the header: throws 400 with a message naming the file. */
export async function checkedInput(
  file: string,
  originalFileName: string,
  settings: TaskSettings,
  limits: EngineLimits,
  outputDir?: string,
): Promise<TaskInput> {
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
  if (size === 0) throw errors.badRequest(`${originalFileName} is empty`);
  if (size > limits.maxFileSize) throw tooLarge(originalFileName, limits);
  if (!sniffImageType(head)) throw errors.badRequest(`${originalFileName} is not a JPG, PNG or WEBP image`);
  try {
    const info = await probeImage({ path: file }, originalFileName, { maxInputPixels: limits.maxInputPixels });
    const out = checkOutputFits(info.width, info.height, settings.scale, settings.saveImageAs, {
      maxOutputPixels: limits.maxOutputPixels,
      name: originalFileName,
    });
    await checkTaskDisk(outputDir ?? path.dirname(file), originalFileName, info, out, settings, limits);
    return { path: file, originalFileName, dimensions: { width: info.width, height: info.height } };
  } catch (e) {
    if (e instanceof ImageInputError) throw errors.badRequest(e.message);
    throw e;
  }
}

/**
 * A task whose temp raster and output cannot fit the free disk of the task folder (inputs, temp rasters and
 * outputs share it) is refused here, with 400, before it is queued; the run checks again before decoding.
 */
async function checkTaskDisk(
  dir: string,
  name: string,
  info: ImageInfo,
  out: OutputSize,
  settings: TaskSettings,
  limits: EngineLimits,
): Promise<void> {
  const budget = estimateJob(
    {
      inWidth: info.width,
      inHeight: info.height,
      hasAlpha: info.hasAlpha,
      outDepth: info.depth === 16 && settings.saveImageAs === 'png' ? 16 : 8,
      outWidth: out.width,
      outHeight: out.height,
      format: settings.saveImageAs,
      tileSize: 512,
    },
    'auto',
    limits.streamAboveBytes,
  );
  await checkDiskBudget({ name, budget, outputDir: dir, tempDir: dir, reserveBytes: limits.diskReserveBytes });
}

function nameFromUrl(url: string): string {
  try {
    const last = new URL(url).pathname.split('/').filter(Boolean).pop();
    return last ? decodeURIComponent(last).slice(0, 200) : 'image';
  } catch {
    return 'image';
  }
}
