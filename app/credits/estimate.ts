/**
 * Credit estimates before a job starts. Cloud prices come from the engine's price table (the single
 * source: `crisp serve` charges by the same table, and docs/api.md documents it for the official
 * service); the service's own creditsToDeduct per task replaces the estimate once a task is started.
 * Local upscaling is free and says so.
 */
import { MAX_MODEL_SCALE, scaleToReach, targetSize, type Scale, type Size } from '../../engine/contract/index.js';
import { DEFAULT_PRICE_TABLE, priceOf, type PriceTable } from '../../engine/service/index.js';
import type { UpscaleSettings } from '../backends/backend.js';
import type { CreditEstimate, Mode } from '../service/crispService.js';

export function estimateCredits(
  mode: Mode,
  settings: Pick<UpscaleSettings, 'scale' | 'face'>,
  items: number,
  table: PriceTable = DEFAULT_PRICE_TABLE,
): CreditEstimate {
  if (mode === 'local') return { mode, credits: 0, items };
  // Priced as start-task is: by the contract's enhanceFace, i.e. whether the job enhances faces at all.
  return {
    mode,
    credits: priceOf(table, { scale: settings.scale, enhanceFace: settings.face !== undefined }, items),
    items,
  };
}

/**
 * The estimate for these images (their input sizes, where known). With an exact size in Cloud mode each image is
 * priced as the service will charge it: at the smallest contract scale that reaches its target, for the output
 * that scale makes (cloudScaleFor in app/remote/outputResize.ts sends the same). An image whose size is not
 * known yet, or whose target needs more than ×8 (refused when it runs), is priced at the settings' scale.
 */
export function estimateCreditsFor(
  mode: Mode,
  settings: Pick<UpscaleSettings, 'scale' | 'face' | 'size'>,
  inputs: readonly (Size | undefined)[],
  table: PriceTable = DEFAULT_PRICE_TABLE,
): CreditEstimate {
  const size = settings.size;
  if (mode === 'local' || !size) return estimateCredits(mode, settings, inputs.length, table);
  const enhanceFace = settings.face !== undefined;
  let credits = 0;
  for (const d of inputs) {
    const scale = d ? scaleToReach(d.width, d.height, targetSize(d.width, d.height, size)) : settings.scale;
    const s = (scale <= MAX_MODEL_SCALE ? scale : settings.scale) as Scale;
    credits += d
      ? priceOf(table, { scale: s, enhanceFace }, [{ width: d.width * s, height: d.height * s }])
      : priceOf(table, { scale: s, enhanceFace }, 1);
  }
  return { mode, credits, items: inputs.length };
}

/** Words for a person, e.g. in the CLI before a batch starts. */
export function describeEstimate(e: CreditEstimate): string {
  if (e.mode === 'local') return `Local upscaling is free (${e.items} image${e.items === 1 ? '' : 's'}).`;
  return `Estimated cost: ${e.credits} credit${e.credits === 1 ? '' : 's'} for ${e.items} image${e.items === 1 ? '' : 's'}.`;
}
