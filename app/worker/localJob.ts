/**
 * A desktop upscale request → core's typed job. The request is checked exactly as start-task checks its
 * fields (the contract's parser, model-name suggestions, installed files, the image's header, disk room,
 * a double upscale's size), so a local refusal reads the same as before and as a server's 400; but nothing
 * of the service runs: no task record, no meter, no queue, no status polling.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  errors,
  isContractError,
  parseTaskSettings,
  sanitizeFileName,
  type SaveImageAs,
  type TaskSettings,
} from '../../engine/contract/index.js';
import type { FaceJob, UpscaleFileJob } from '../../engine/core/index.js';
import { FaceModelMissingError, resolveFaceModel } from '../../engine/faces/faceModels.js';
import type { EngineLimits } from '../../engine/limits.js';
import { ModelNotInstalledError } from '../../engine/models/catalog.js';
import { resolveTaskModelField } from '../../engine/models/modelNames.js';
import { checkPreModel } from '../../engine/models/preModel.js';
import { metadataRequest } from '../../engine/core/provenance.js';
import { isMetadataPolicy } from '../../engine/pipeline/metadataPolicy.js';
import { customModelNames, resolveTaskModel, type TaskModelSources } from '../../engine/models/taskModel.js';
import { checkPassesFit, ImageInputError } from '../../engine/pipeline/index.js';
import { checkedInput } from '../../engine/tasks/taskInputs.js';
import type { LocalUpscale, WorkerEngineOptions } from './protocol.js';

export interface LocalJobContext {
  options: WorkerEngineOptions;
  sources: TaskModelSources;
  limits: EngineLimits;
}

function badRequest(e: unknown): never {
  if (e instanceof ImageInputError || e instanceof ModelNotInstalledError || e instanceof FaceModelMissingError)
    throw errors.badRequest(e.message);
  throw e;
}

async function settingsOf(fields: LocalUpscale['fields'], customModelsDir: string | undefined): Promise<TaskSettings> {
  // Read the registry per job so a model imported while the app runs is usable at once.
  const custom = customModelsDir === undefined ? undefined : await customModelNames(customModelsDir);
  const named = resolveTaskModelField(fields, custom);
  try {
    return parseTaskSettings(named.fields, custom ? { extraModels: (name) => custom.has(name) } : {});
  } catch (e) {
    throw named.suggestion && isContractError(e) && e.status === 400
      ? errors.badRequest(`${e.message.replace(/^Bad Request: /, '')}.${named.suggestion}`)
      : e;
  }
}

/** The face part of a job: per-job model and strength when the request names them, else the worker's. */
function faceOf(fields: LocalUpscale['fields'], options: WorkerEngineOptions, modelDirs: string[]): FaceJob {
  // An empty name means "the best installed one", as in the settings.
  const named = typeof fields.faceModel === 'string' && fields.faceModel !== '' ? fields.faceModel : undefined;
  const model = named ?? options.faces?.model;
  if (model === undefined) throw errors.faceNotAvailable();
  const strength = typeof fields.faceStrength === 'number' ? fields.faceStrength : (options.faces?.strength ?? 1);
  // Checked here so a missing face model is a refusal before any work, as start-task refused it.
  try {
    resolveFaceModel(model ?? undefined, modelDirs);
  } catch (e) {
    badRequest(e);
  }
  return { model, strength: Math.min(1, Math.max(0, strength)) };
}

export async function localJob(msg: LocalUpscale, ctx: LocalJobContext): Promise<UpscaleFileJob> {
  const { options, sources, limits } = ctx;
  const settings = await settingsOf(msg.fields, sources.customModelsDir);
  const inputName = sanitizeFileName(msg.inputName);
  const face = settings.enhanceFace ? faceOf(msg.fields, options, sources.modelDirs) : undefined;
  try {
    await resolveTaskModel(settings, sources, { build: false });
  } catch (e) {
    badRequest(e);
  }
  // The output's folder is where its temp raster goes too: the disk check measures it, so it must exist.
  await mkdir(path.dirname(msg.outputPath), { recursive: true });
  const input = await checkedInput(msg.inputPath, inputName, settings, limits, path.dirname(msg.outputPath));
  const passes = msg.fields.passes === 2 ? 2 : 1;
  if (passes === 2 && input.dimensions) {
    try {
      checkPassesFit(input.dimensions.width, input.dimensions.height, settings.scale, 2, settings.saveImageAs, {
        name: inputName,
        maxInputPixels: limits.maxInputPixels,
        maxOutputPixels: limits.maxOutputPixels,
      });
    } catch (e) {
      badRequest(e);
    }
  }
  const precision = msg.fields.precision;
  // The policy is the app's extension, not a start-task field; absent: what a service's outputs carry.
  const metadata = isMetadataPolicy(msg.fields.metadata) ? msg.fields.metadata : undefined;
  const preModel =
    typeof msg.fields.preModel === 'string' && msg.fields.preModel !== ''
      ? await checkPreModel(
          msg.fields.preModel,
          sources.customModelsDir === undefined ? undefined : await customModelNames(sources.customModelsDir),
          sources,
        )
      : undefined;
  return {
    inputPath: msg.inputPath,
    inputName,
    outputPath: msg.outputPath,
    model: settings.model,
    ...(settings.denoise !== undefined ? { denoise: settings.denoise } : {}),
    scale: settings.scale,
    format: settings.saveImageAs as SaveImageAs,
    compression: settings.compression,
    ...(passes === 2 ? { passes: 2 as const } : {}),
    ...(preModel ? { preModel } : {}),
    ...(face ? { face } : {}),
    ...(metadata
      ? {
          metadata: metadataRequest(metadata, {
            model: settings.model,
            scale: settings.scale,
            passes,
            face: settings.enhanceFace,
          }),
        }
      : {}),
    ...(options.tileSize ? { tileSize: options.tileSize } : {}),
    ...(precision === 'fp32' || precision === 'int8' ? { precision } : {}),
    limits: {
      maxInputPixels: limits.maxInputPixels,
      maxOutputPixels: limits.maxOutputPixels,
      streamAboveBytes: limits.streamAboveBytes,
      diskReserveBytes: limits.diskReserveBytes,
    },
  };
}
