/**
 * Credit estimates before a job starts. Cloud prices come from the engine's price table (the single
 * source: `crisp serve` charges by the same table, and docs/api.md documents it for the official
 * service); the service's own creditsToDeduct per task replaces the estimate once a task is started.
 * Local upscaling is free and says so.
 */
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

/** Words for a person, e.g. in the CLI before a batch starts. */
export function describeEstimate(e: CreditEstimate): string {
  if (e.mode === 'local') return `Local upscaling is free (${e.items} image${e.items === 1 ? '' : 's'}).`;
  return `Estimated cost: ${e.credits} credit${e.credits === 1 ? '' : 's'} for ${e.items} image${e.items === 1 ? '' : 's'}.`;
}
