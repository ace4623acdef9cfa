/**
 * Brings a start-task's sources into the task: direct files are copied into the task folder, uploaded
 * files are resolved to the caller's completed uploads, URLs are recorded to be fetched when the task
 * runs. Every image whose bytes are at hand is identified and its header checked now (core's input check,
 * the same the desktop's local job runs), so a text file named .jpg, an empty file or a 100000×100000 header
 * is refused with 400 before anything is queued.
 */
import { copyFile, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Caller } from '../api.js';
import { errors, type StartTaskRequest } from '../../contract/index.js';
import { checkedInput, fileTooLarge } from '../../core/inputs.js';
import type { EngineLimits } from '../limits.js';
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
      if (f.data.length > limits.maxFileSize) throw fileTooLarge(f.originalFileName, limits.maxFileSize);
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

function nameFromUrl(url: string): string {
  try {
    const last = new URL(url).pathname.split('/').filter(Boolean).pop();
    return last ? decodeURIComponent(last).slice(0, 200) : 'image';
  } catch {
    return 'image';
  }
}
