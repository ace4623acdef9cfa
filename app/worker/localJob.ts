/**
 * A desktop upscale request → core's typed job, through core's one request check (engine/core/checkJob.ts, the
 * one start-task uses): the contract's parser, model-name suggestions, installed files, the face model, a size,
 * a double upscale, a pre-model; then the image's own checks (its header, disk room, a double upscale's size).
 * Nothing of the service runs: no task record, no meter, no queue. A refusal keeps the catalog code core gave
 * it (model-not-installed, face-model-missing, unusable-image, not-enough-space…): there is no HTTP answer here
 * to fold it into a 400.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { loadRequestParsers, refusalBehind, sanitizeFileName } from '../../engine/contract/index.js';
import { loadInputs, loadJobCheck, type TaskModelSources, type UpscaleFileJob } from '../../engine/core/index.js';
import type { EngineLimits } from '../../engine/service/index.js';
import type { LocalUpscale, WorkerEngineOptions } from './protocol.js';

export interface LocalJobContext {
  options: WorkerEngineOptions;
  sources: TaskModelSources;
  limits: EngineLimits;
}

/** The job, or the refusal with the catalog code core gave it (a server's 400 is made of it: refusalBehind). */
export async function localJob(msg: LocalUpscale, ctx: LocalJobContext): Promise<UpscaleFileJob> {
  try {
    return await checkedJob(msg, ctx);
  } catch (e) {
    throw refusalBehind(e);
  }
}

async function checkedJob(msg: LocalUpscale, ctx: LocalJobContext): Promise<UpscaleFileJob> {
  const { options, sources, limits } = ctx;
  // The checks' engine modules (sharp, zod): the engine worker loads them with its first job.
  const [{ checkRequest, checkImageFits, imageJob }, { checkedInput }, { parseTaskSettings }] = await Promise.all([
    loadJobCheck(),
    loadInputs(),
    loadRequestParsers(),
  ]);
  // The job's face is the contract's enhanceFace; size, passes, pre-model, metadata and precision are the app's
  // extensions, checked by the same function.
  const { face, size, passes, preModel, metadata, precision, ...fields } = msg.settings;
  const { choices, nativeScale } = await checkRequest(
    {
      fields: { ...fields, enhanceFace: face !== undefined },
      passes,
      preModel,
      metadata,
      precision,
      ...(face ? { face } : {}),
      ...(size ? { size } : {}),
    },
    sources,
    parseTaskSettings,
  );
  const inputName = sanitizeFileName(msg.inputName);
  // The output's folder is where its temp raster goes too: the disk check measures it, so it must exist.
  await mkdir(path.dirname(msg.outputPath), { recursive: true });
  const input = await checkedInput(
    msg.inputPath,
    inputName,
    { ...choices.settings, ...(choices.size ? { size: choices.size, nativeScale } : {}) },
    limits,
    path.dirname(msg.outputPath),
  );
  if (input.dimensions) checkImageFits(input.dimensions, choices, inputName, limits);
  return imageJob(
    choices,
    { inputPath: msg.inputPath, inputName, outputPath: msg.outputPath },
    { tileSize: options.tileSize, limits },
  );
}
