/**
 * The one check an upscale request passes before any work or charge, and the job core runs for each of its
 * images. start-task (engine/service/startTask.ts) and the desktop/CLI engine (app/worker/localJob.ts) check a
 * request with `checkRequest`; the task runner and the desktop build each image's job with `imageJob`. After
 * it nothing re-checks, re-clamps or re-defaults: the choices it answers are the job's.
 *
 * What it checks, in order: the model name (an imported model's bare name, "did you mean …" on an unknown
 * one), the contract's fields (by the caller's parser: start-task's also reads the task's sources), whatever
 * the caller checks next (a server without faces refuses enhanceFace), the face model, the model's files, an
 * exact size, a double upscale, a pre-model. Each refusal keeps the catalog code it was raised with.
 */
import {
  errors,
  sizeRequestProblem,
  type SaveImageAs,
  type SizeRequest,
  type TaskSettings,
  type TaskSettingsOptions,
} from '../contract/index.js';
import { resolveFaceModel } from './faces/faceModels.js';
import type { FaceJob, UpscaleFileJob } from './job.js';
import { resolveTaskModelField, withModelSuggestion } from './models/modelNames.js';
import { checkPreModel } from './models/preModel.js';
import { customModelNames, resolveTaskModel, type TaskModelSources } from './models/taskModel.js';
import { checkPassesFit } from './pipeline/index.js';
import { isMetadataPolicy, type MetadataPolicy } from './pipeline/metadataPolicy.js';
import type { ImageLimits } from './pipeline/probe.js';
import { metadataRequest } from './provenance.js';
import { PRECISIONS, type Precision } from './inference/providers.js';

/** An explicit precision (auto is the absence of one). */
const isPrecision = (p: unknown): p is Precision => p !== 'auto' && (PRECISIONS as readonly unknown[]).includes(p);

/** What a checked request asks of every one of its images. */
export interface JobChoices {
  settings: TaskSettings;
  passes: 1 | 2;
  size?: SizeRequest;
  /** A checked 1× model name run before the upscaler. */
  preModel?: string;
  /** Checked: the model installed (null: the best one), strength within 0..1. */
  face?: FaceJob;
  metadata?: MetadataPolicy;
  precision?: Precision;
}

/** A request as it arrives: start-task's fields, plus the engine's extensions (absent: not asked for). */
export interface JobRequest {
  fields: Record<string, unknown>;
  passes?: unknown;
  size?: SizeRequest;
  preModel?: unknown;
  face?: FaceJob;
  metadata?: unknown;
  precision?: unknown;
}

export interface CheckedRequest<R extends TaskSettings> {
  /** The parser's answer (start-task's includes the task's sources). */
  request: R;
  choices: JobChoices;
  /** The model's own scale: what the price and an exact size are worked out from. */
  nativeScale: number;
  /** `custom:<name>` names of the imported models (undefined: the engine offers none, as `crisp serve`). */
  custom: ReadonlySet<string> | undefined;
}

export const SIZE_PASSES_REFUSAL =
  'An exact size (width, height, long side) and double upscale cannot be combined: the size chooses the model pass itself. Choose one pass, or a scale.';

export async function checkRequest<R extends TaskSettings>(
  req: JobRequest,
  sources: TaskModelSources,
  parse: (fields: Record<string, unknown>, options: TaskSettingsOptions) => R,
  afterParse?: (request: R) => void,
): Promise<CheckedRequest<R>> {
  // Read the registry per request so a model imported while the engine runs is usable at once.
  const custom = sources.customModelsDir === undefined ? undefined : await customModelNames(sources.customModelsDir);
  // An imported model answers to its bare name too; an unknown name gets "did you mean …" in its refusal.
  const named = resolveTaskModelField(req.fields, custom);
  let request: R;
  try {
    request = parse(named.fields, custom ? { extraModels: (name) => custom.has(name) } : {});
  } catch (e) {
    throw withModelSuggestion(e, named.suggestion);
  }
  afterParse?.(request);
  const face = req.face ? checkedFace(req.face, sources.modelDirs) : undefined;
  const nativeScale = (await resolveTaskModel(request, sources, { build: false })).entry.scale;
  const size = req.size ? checkedSize(req.size) : undefined;
  const passes = req.passes === 2 ? 2 : 1;
  if (passes === 2 && size) throw errors.badRequest(SIZE_PASSES_REFUSAL);
  const preModel =
    typeof req.preModel === 'string' && req.preModel !== ''
      ? await checkPreModel(req.preModel, custom, sources)
      : undefined;
  const settings: TaskSettings = {
    model: request.model,
    scale: request.scale,
    saveImageAs: request.saveImageAs,
    enhanceFace: request.enhanceFace,
    compression: request.compression,
    ...(request.denoise !== undefined ? { denoise: request.denoise } : {}),
  };
  const choices: JobChoices = {
    settings,
    passes,
    ...(size ? { size } : {}),
    ...(preModel ? { preModel } : {}),
    ...(face ? { face } : {}),
    ...(isMetadataPolicy(req.metadata) ? { metadata: req.metadata } : {}),
    ...(isPrecision(req.precision) ? { precision: req.precision } : {}),
  };
  return { request, choices, nativeScale, custom };
}

/**
 * A double upscale refused from an image's header, before any pass, when its result would exceed the limits
 * (an ImageInputError naming the image and the limit).
 */
export function checkImageFits(
  dimensions: { width: number; height: number },
  choices: JobChoices,
  name: string,
  limits: Pick<ImageLimits, 'maxInputPixels' | 'maxOutputPixels'>,
): void {
  if (choices.passes !== 2) return;
  checkPassesFit(dimensions.width, dimensions.height, choices.settings.scale, 2, choices.settings.saveImageAs, {
    name,
    maxInputPixels: limits.maxInputPixels,
    maxOutputPixels: limits.maxOutputPixels,
  });
}

/** One image's job: the request's choices as they are, where it is read and written, and the engine's limits. */
export function imageJob(
  choices: JobChoices,
  image: { inputPath: string; inputName: string; outputPath: string },
  engine: { tileSize?: number | undefined; limits: ImageLimits },
): UpscaleFileJob {
  const { settings, passes, face } = choices;
  return {
    ...image,
    model: settings.model,
    ...(settings.denoise !== undefined ? { denoise: settings.denoise } : {}),
    scale: settings.scale,
    ...(choices.size ? { size: choices.size } : {}),
    format: settings.saveImageAs as SaveImageAs,
    compression: settings.compression,
    ...(passes === 2 ? { passes: 2 as const } : {}),
    ...(choices.preModel ? { preModel: choices.preModel } : {}),
    ...(face ? { face } : {}),
    ...(choices.metadata
      ? {
          metadata: metadataRequest(choices.metadata, {
            model: settings.model,
            scale: settings.scale,
            passes,
            face: face !== undefined,
          }),
        }
      : {}),
    ...(engine.tileSize !== undefined ? { tileSize: engine.tileSize } : {}),
    ...(choices.precision ? { precision: choices.precision } : {}),
    limits: {
      maxInputPixels: engine.limits.maxInputPixels,
      maxOutputPixels: engine.limits.maxOutputPixels,
      streamAboveBytes: engine.limits.streamAboveBytes,
      diskReserveBytes: engine.limits.diskReserveBytes,
    },
  };
}

/** The job's face as it will run: the model checked now (face-model-missing before any work), strength 0..1. */
function checkedFace(face: FaceJob, modelDirs: string[]): FaceJob {
  // An empty name means "the best installed one", as in the settings.
  const model = face.model || null;
  resolveFaceModel(model ?? undefined, modelDirs);
  const strength = typeof face.strength === 'number' && Number.isFinite(face.strength) ? face.strength : 1;
  return { model, strength: Math.min(1, Math.max(0, strength)), ...(face.detect ? { detect: face.detect } : {}) };
}

/** A size request as the engine takes it: whole positive pixels, long side alone (refused in words otherwise). */
function checkedSize(size: SizeRequest): SizeRequest {
  const problem = sizeRequestProblem(size);
  if (problem) throw errors.badRequest(problem);
  return size;
}
