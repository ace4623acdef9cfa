/**
 * A desktop upscale request → core's typed job. The request is checked exactly as start-task checks its
 * fields (the contract's parser, model-name suggestions, installed files, the image's header, disk room,
 * a double upscale's size), so a local refusal reads like a server's 400; but nothing of the service runs:
 * no task record, no meter, no queue, no status polling. A refusal keeps the catalog code core gave it
 * (model-not-installed, face-model-missing, unusable-image, not-enough-space…): there is no HTTP answer here
 * to fold it into a 400.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  errors,
  loadRequestParsers,
  refusalBehind,
  sanitizeFileName,
  sizeRequestProblem,
  type SaveImageAs,
  type SizeRequest,
  type TaskSettings,
} from '../../engine/contract/index.js';
import {
  isMetadataPolicy,
  loadInputs,
  loadPipeline,
  loadPreModels,
  loadTaskModels,
  metadataRequest,
  resolveFaceModel,
  resolveTaskModelField,
  withModelSuggestion,
  type FaceJob,
  type TaskModelSources,
  type UpscaleFileJob,
} from '../../engine/core/index.js';
import type { UpscaleSettings } from '../backends/backend.js';
import type { EngineLimits } from '../../engine/service/index.js';
import type { LocalUpscale, WorkerEngineOptions } from './protocol.js';

export interface LocalJobContext {
  options: WorkerEngineOptions;
  sources: TaskModelSources;
  limits: EngineLimits;
}

async function settingsOf(request: UpscaleSettings, customModelsDir: string | undefined): Promise<TaskSettings> {
  const [{ customModelNames }, { parseTaskSettings }] = await Promise.all([loadTaskModels(), loadRequestParsers()]);
  // Read the registry per job so a model imported while the app runs is usable at once.
  const custom = customModelsDir === undefined ? undefined : await customModelNames(customModelsDir);
  // Checked as start-task's fields, where the job's face is the contract's enhanceFace.
  const { face, size: _size, ...fields } = request;
  const named = resolveTaskModelField({ ...fields, enhanceFace: face !== undefined }, custom);
  try {
    return parseTaskSettings(named.fields, custom ? { extraModels: (name) => custom.has(name) } : {});
  } catch (e) {
    throw withModelSuggestion(e, named.suggestion);
  }
}

/** The job's face as it will run: the model checked now, the strength kept within 0..1 (default 1). */
function checkedFace(face: FaceJob, modelDirs: string[]): FaceJob {
  // An empty name means "the best installed one", as in the settings.
  const model = face.model || null;
  // Checked here so a missing face model (face-model-missing) is a refusal before any work, as in start-task.
  resolveFaceModel(model ?? undefined, modelDirs);
  const strength = typeof face.strength === 'number' && Number.isFinite(face.strength) ? face.strength : 1;
  return { model, strength: Math.min(1, Math.max(0, strength)), ...(face.detect ? { detect: face.detect } : {}) };
}

export const SIZE_PASSES_REFUSAL =
  'An exact size (width, height, long side) and double upscale cannot be combined: the size chooses the model pass itself. Choose one pass, or a scale.';

/** A size request as the engine takes it: whole positive pixels, long side alone (refused in words otherwise). */
function checkedSize(size: SizeRequest): SizeRequest {
  const problem = sizeRequestProblem(size);
  if (problem) throw errors.badRequest(problem);
  return size;
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
  const [{ customModelNames, resolveTaskModel }, { checkedInput }, { checkPassesFit }, { checkPreModel }] =
    await Promise.all([loadTaskModels(), loadInputs(), loadPipeline(), loadPreModels()]);
  const request = msg.settings;
  const settings = await settingsOf(request, sources.customModelsDir);
  const inputName = sanitizeFileName(msg.inputName);
  const face = request.face ? checkedFace(request.face, sources.modelDirs) : undefined;
  const model = await resolveTaskModel(settings, sources, { build: false });
  const size = request.size ? checkedSize(request.size) : undefined;
  // The output's folder is where its temp raster goes too: the disk check measures it, so it must exist.
  await mkdir(path.dirname(msg.outputPath), { recursive: true });
  const input = await checkedInput(
    msg.inputPath,
    inputName,
    { ...settings, ...(size ? { size, nativeScale: model.entry.scale } : {}) },
    limits,
    path.dirname(msg.outputPath),
  );
  const passes = request.passes === 2 ? 2 : 1;
  if (passes === 2 && size) throw errors.badRequest(SIZE_PASSES_REFUSAL);
  if (passes === 2 && input.dimensions) {
    checkPassesFit(input.dimensions.width, input.dimensions.height, settings.scale, 2, settings.saveImageAs, {
      name: inputName,
      maxInputPixels: limits.maxInputPixels,
      maxOutputPixels: limits.maxOutputPixels,
    });
  }
  const precision = request.precision;
  // The policy is the app's extension, not a start-task field; absent: what a service's outputs carry.
  const metadata = isMetadataPolicy(request.metadata) ? request.metadata : undefined;
  const preModel =
    typeof request.preModel === 'string' && request.preModel !== ''
      ? await checkPreModel(
          request.preModel,
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
    ...(size ? { size } : {}),
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
            face: face !== undefined,
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
