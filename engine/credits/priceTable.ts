/**
 * The server's price table (documented in docs/api.md#prices): credits per output image by scale band,
 * a surcharge per image when face enhancement is on, and a surcharge by the output's size in
 * megapixels. Larger scales and larger outputs cost more because inference time grows with the output's
 * pixel count; the first size row adds nothing, so images up to its size keep the scale-band price.
 */
import type { Scale, TaskSettings } from '../contract/index.js';

export interface PriceBand {
  minScale: Scale;
  maxScale: Scale;
  creditsPerImage: number;
}

/** One output-size row: images whose output has at most `upToMegapixels` MP (null: any size) add `extraCreditsPerImage`. */
export interface OutputSizeRow {
  upToMegapixels: number | null;
  extraCreditsPerImage: number;
}

export interface PriceTable {
  bands: readonly PriceBand[];
  faceEnhancementPerImage: number;
  /** Ordered by size; the first row whose limit the output fits in applies. */
  outputSizeRows: readonly OutputSizeRow[];
}

/** An output image's size; `undefined` when it is not known yet (a URL input before it is fetched). */
export interface OutputSize {
  width: number;
  height: number;
}

export const DEFAULT_PRICE_TABLE: PriceTable = {
  bands: [
    { minScale: 1, maxScale: 2, creditsPerImage: 1 },
    { minScale: 3, maxScale: 4, creditsPerImage: 2 },
    { minScale: 5, maxScale: 6, creditsPerImage: 3 },
    { minScale: 7, maxScale: 8, creditsPerImage: 4 },
  ],
  faceEnhancementPerImage: 1,
  // 16 MP is a 1000×1000 photo at ×4 or a 2000×2000 one at ×2: everything up to it keeps the old price.
  outputSizeRows: [
    { upToMegapixels: 16, extraCreditsPerImage: 0 },
    { upToMegapixels: 64, extraCreditsPerImage: 2 },
    { upToMegapixels: 144, extraCreditsPerImage: 6 },
    { upToMegapixels: null, extraCreditsPerImage: 12 },
  ],
};

export function sizeSurcharge(table: PriceTable, output: OutputSize | undefined): number {
  if (!output) return 0;
  const mp = (output.width * output.height) / 1_000_000;
  const row = table.outputSizeRows.find((r) => r.upToMegapixels === null || mp <= r.upToMegapixels);
  return row?.extraCreditsPerImage ?? table.outputSizeRows.at(-1)?.extraCreditsPerImage ?? 0;
}

/**
 * Credits for a task. `images` is either a count (sizes unknown: priced as if within the first size
 * row) or each output's size (`undefined` entries likewise).
 */
export function priceOf(
  table: PriceTable,
  settings: Pick<TaskSettings, 'scale' | 'enhanceFace'>,
  images: number | readonly (OutputSize | undefined)[],
): number {
  const band = table.bands.find((b) => settings.scale >= b.minScale && settings.scale <= b.maxScale);
  if (!band) throw new Error(`price table has no band for scale ${settings.scale}`);
  const perImage = band.creditsPerImage + (settings.enhanceFace ? table.faceEnhancementPerImage : 0);
  if (typeof images === 'number') return perImage * Math.max(0, images);
  return images.reduce<number>((sum, out) => sum + perImage + sizeSurcharge(table, out), 0);
}

/** The output size of an input of `width`×`height` at `scale`. */
export function outputSizeOf(dimensions: { width: number; height: number }, scale: number): OutputSize {
  return { width: dimensions.width * scale, height: dimensions.height * scale };
}
