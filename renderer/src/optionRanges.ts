/**
 * The ranges of the numeric controls, read from the one declaration of upscale options
 * (app/settings/upscaleOptions.ts) that also checks the settings file, the IPC arguments and the CLI flags.
 */
import { optionControl, type UpscaleOptionKey } from '../../app/settings/upscaleOptions.js';

export interface ControlRange {
  min: number;
  max: number;
  step: number;
}

function rangeOf(key: UpscaleOptionKey): ControlRange {
  const c = optionControl(key);
  if (c.kind !== 'range') throw new Error(`option ${key} is not a range`);
  return { min: c.min, max: c.max, step: c.step };
}

export const DENOISE_RANGE = rangeOf('denoise');
export const COMPRESSION_RANGE = rangeOf('compression');
export const THREADS_RANGE = rangeOf('threads');
export const FACE_STRENGTH_RANGE = rangeOf('faceStrength');
