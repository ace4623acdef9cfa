/**
 * Which waiting images the engine would refuse as too large, read from the sizes their headers gave when they
 * were added, before anything runs — so the bar never says "Ready" beside images that can only fail. The check
 * is the engine's own (pipeline planOutput / checkPassesFit, the same calls a job makes), against the limits
 * that will apply: the local engine's (CRISP_MAX_OUTPUT_PIXELS included) in Local mode; in Cloud mode only the
 * contract's per-format side limits, since a service's pixel limits are its own and not published.
 */
import type { Size } from '../../engine/contract/index.js';
import { loadPipeline } from '../../engine/core/index.js';
import { resolveLimits } from '../../engine/service/index.js';
import type { UpscaleSettings } from '../backends/backend.js';
import type { Mode } from '../service/crispService.js';

export async function countTooLarge(
  mode: Mode,
  job: Pick<UpscaleSettings, 'scale' | 'size' | 'passes' | 'saveImageAs'>,
  inputs: readonly (Size | undefined)[],
): Promise<number> {
  const known = inputs.filter((d): d is Size => d !== undefined);
  if (known.length === 0) return 0;
  const { planOutput, checkPassesFit, isImageInputError } = await loadPipeline();
  const local = resolveLimits();
  const limits =
    mode === 'local'
      ? { maxOutputPixels: local.maxOutputPixels, maxInputPixels: local.maxInputPixels }
      : { maxOutputPixels: Number.POSITIVE_INFINITY, maxInputPixels: Number.POSITIVE_INFINITY };
  let tooLarge = 0;
  for (const d of known) {
    try {
      if (job.passes === 2 && !job.size) checkPassesFit(d.width, d.height, job.scale, 2, job.saveImageAs, limits);
      else
        planOutput(d.width, d.height, job.scale, job.saveImageAs, {
          ...limits,
          ...(job.size ? { size: job.size, nativeScale: job.scale } : {}),
        });
    } catch (e) {
      // Only the size refusals count; anything else is a fault to see, not a verdict on the image.
      if (!isImageInputError(e)) throw e;
      tooLarge++;
    }
  }
  return tooLarge;
}
