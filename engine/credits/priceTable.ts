/**
 * The server's price table (documented in docs/deploy.md and docs/api.md): credits per output image by
 * scale band, plus a surcharge per image when face enhancement is on. Larger scales cost more because
 * inference time grows with the output's pixel count.
 */
import type { Scale, TaskSettings } from '../contract/index.js';

export interface PriceBand {
  minScale: Scale;
  maxScale: Scale;
  creditsPerImage: number;
}

export interface PriceTable {
  bands: readonly PriceBand[];
  faceEnhancementPerImage: number;
}

export const DEFAULT_PRICE_TABLE: PriceTable = {
  bands: [
    { minScale: 1, maxScale: 2, creditsPerImage: 1 },
    { minScale: 3, maxScale: 4, creditsPerImage: 2 },
    { minScale: 5, maxScale: 6, creditsPerImage: 3 },
    { minScale: 7, maxScale: 8, creditsPerImage: 4 },
  ],
  faceEnhancementPerImage: 1,
};

export function priceOf(table: PriceTable, settings: Pick<TaskSettings, 'scale' | 'enhanceFace'>, imageCount: number): number {
  const band = table.bands.find((b) => settings.scale >= b.minScale && settings.scale <= b.maxScale);
  if (!band) throw new Error(`price table has no band for scale ${settings.scale}`);
  const perImage = band.creditsPerImage + (settings.enhanceFace ? table.faceEnhancementPerImage : 0);
  return perImage * Math.max(0, imageCount);
}
