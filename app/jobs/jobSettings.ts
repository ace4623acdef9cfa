/**
 * What one job runs with, derived from the upscale options (settings file or CLI flags), and the two
 * things every job path computes from it: the backend request fields and the output name. The app's queue
 * and both CLI commands call these, so local and remote, app and CLI agree.
 */
import { DENOISE_MODEL, sizeRequestOf, targetSize, type Size } from '../../engine/contract/index.js';
import { renderOutputName } from '../../engine/service/index.js';
import type { UpscaleSettings } from '../backends/backend.js';
import type { Mode } from '../settings/settingsSchema.js';
import type { UpscaleOptions } from '../settings/upscaleOptions.js';

export type JobSettings = Pick<
  UpscaleOptions,
  'model' | 'scale' | 'format' | 'compression' | 'face' | 'outputFolder' | 'template' | 'overwrite'
> &
  Partial<
    Pick<
      UpscaleOptions,
      'faceModel' | 'faceStrength' | 'precision' | 'passes' | 'preModel' | 'metadata' | 'width' | 'height' | 'longSide'
    >
  > & {
    /** Sent as the `denoise` extension field when present (only where it applies: see jobSettingsFrom). */
    denoise?: number;
    /** Local-only extensions (precision, metadata) go to the local engine only; absent = local. */
    mode?: Mode;
  };

/** `options.denoise` undefined = not asked for (the CLI without --denoise). */
export function jobSettingsFrom(
  options: Omit<UpscaleOptions, 'denoise'> & { denoise?: number | undefined },
  mode: Mode,
): JobSettings {
  return {
    mode,
    model: options.model,
    scale: options.scale,
    width: options.width,
    height: options.height,
    longSide: options.longSide,
    format: options.format,
    compression: options.compression,
    face: options.face,
    faceModel: options.faceModel,
    faceStrength: options.faceStrength,
    precision: options.precision,
    passes: options.passes,
    preModel: options.preModel,
    outputFolder: options.outputFolder,
    template: options.template,
    overwrite: options.overwrite,
    metadata: options.metadata,
    // The denoise extension exists for one model, and only the local engine is known to accept it.
    ...(mode === 'local' && options.model === DENOISE_MODEL && options.denoise !== undefined
      ? { denoise: options.denoise }
      : {}),
  };
}

/** The start-task fields for the backend (contract names; extensions only where they apply). */
export function upscaleSettingsFor(job: JobSettings): UpscaleSettings {
  const size = sizeRequestOf(job);
  return {
    model: job.model,
    scale: job.scale,
    saveImageAs: job.format,
    compression: job.compression,
    // An exact size replaces the scale: the local engine chooses its model pass, Cloud its contract scale.
    ...(size ? { size } : {}),
    // The settings' three face fields become the job's one: an empty model name means the best installed one.
    ...(job.face
      ? {
          face: {
            model: job.faceModel || null,
            ...(job.faceStrength !== undefined ? { strength: job.faceStrength } : {}),
          },
        }
      : {}),
    ...(job.denoise !== undefined ? { denoise: job.denoise } : {}),
    ...(job.mode !== 'cloud' && job.precision !== undefined && job.precision !== 'auto'
      ? { precision: job.precision }
      : {}),
    // The local engine applies the policy and writes the provenance record; a service's outputs are its own.
    ...(job.mode !== 'cloud' && job.metadata !== undefined ? { metadata: job.metadata } : {}),
    // Sent in Cloud mode too, so the remote backend can refuse it in words instead of running one pass silently.
    ...(job.passes === 2 ? { passes: 2 as const } : {}),
    // Sent in Cloud mode too, for the same reason.
    ...(job.preModel ? { preModel: job.preModel } : {}),
  };
}

/**
 * The output file name for an input under these settings (before the overwrite policy numbers it). With an
 * exact size, the input's dimensions (read when it was added) let the name say the output's size.
 */
export function jobOutputName(job: JobSettings, inputPath: string, input?: Size): string {
  const size = sizeRequestOf(job);
  return renderOutputName(job.template, {
    originalFileName: inputPath,
    model: job.model,
    scale: job.scale,
    format: job.format,
    denoise: job.denoise,
    ...(job.face ? { face: { model: job.faceModel ?? null, strength: job.faceStrength } } : {}),
    passes: job.passes,
    ...(size
      ? { size: { request: size, ...(input ? { output: targetSize(input.width, input.height, size) } : {}) } }
      : {}),
  });
}
