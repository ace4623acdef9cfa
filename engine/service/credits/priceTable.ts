/**
 * The server's price table (documented in docs/api.md#prices): credits per output image by scale band,
 * a surcharge per image when face enhancement is on, and a surcharge by the output's size in
 * megapixels — or by the pixels the model produces, whichever row is higher. Larger scales and larger
 * outputs cost more because inference time grows with the pixel count; the first rows add nothing, so
 * images up to their size keep the scale-band price.
 */
import type { Scale, TaskSettings } from '../../contract/index.js';

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
  /**
   * The same rows over the pixels the model produces (input MP × the model's native scale² × passes),
   * which is what inference time follows: a ×4 model asked for ×1 still makes 16 pixels per input pixel
   * and is only resized afterwards. An image's surcharge is the larger of the two rows' surcharges.
   */
  modelPixelRows: readonly OutputSizeRow[];
  /**
   * Beyond the rows, the price keeps following the work: model output above `aboveMegapixels` costs one
   * credit per started `megapixelsPerCredit` of all of it, so an image's credits grow with the tiles it runs
   * and no image is cheap however long it holds the device (issue 40: a flat 400 MP image at ×1 was 13 credits).
   */
  workBeyondRows: { aboveMegapixels: number; megapixelsPerCredit: number };
}

/** An output image's size; `undefined` when it is not known yet (a URL input before it is fetched). */
export interface OutputSize {
  width: number;
  height: number;
  /** Pixels the model produces for it (modelPixelsOf); absent: only the output size is priced. */
  modelPixels?: number;
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
  // Four times the output rows: the ×1–2 band already covers a ×4 model's work at ×2 (4 model pixels per
  // output pixel), so the price of ×2 and above is unchanged for every image, and only work beyond that —
  // ×1 of a large image, double upscales — costs more (e.g. ×1 of 16 MP: 256 model MP, like ×2 of it).
  modelPixelRows: [
    { upToMegapixels: 64, extraCreditsPerImage: 0 },
    { upToMegapixels: 256, extraCreditsPerImage: 2 },
    { upToMegapixels: 576, extraCreditsPerImage: 6 },
    { upToMegapixels: null, extraCreditsPerImage: 12 },
  ],
  // The rows' own slope (576 MP: +6, i.e. 96 MP a credit) continued from where the top row's +12 is reached.
  workBeyondRows: { aboveMegapixels: 1152, megapixelsPerCredit: 96 },
};

function rowSurcharge(rows: readonly OutputSizeRow[], pixels: number): number {
  const mp = pixels / 1_000_000;
  const row = rows.find((r) => r.upToMegapixels === null || mp <= r.upToMegapixels);
  return row?.extraCreditsPerImage ?? rows.at(-1)?.extraCreditsPerImage ?? 0;
}

function workSurcharge(table: PriceTable, modelPixels: number): number {
  const mp = modelPixels / 1_000_000;
  const beyond = table.workBeyondRows;
  if (mp > beyond.aboveMegapixels) return Math.ceil(mp / beyond.megapixelsPerCredit);
  return rowSurcharge(table.modelPixelRows, modelPixels);
}

export function sizeSurcharge(table: PriceTable, output: OutputSize | undefined): number {
  if (!output) return 0;
  const bySize = rowSurcharge(table.outputSizeRows, output.width * output.height);
  const byWork = output.modelPixels === undefined ? 0 : workSurcharge(table, output.modelPixels);
  return Math.max(bySize, byWork);
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

/**
 * What an input of `width`×`height` costs in pixels: its output at `scale`, and the pixels the model makes
 * (input × native scale² × passes; without a native scale, only the output is priced).
 */
export function outputSizeOf(
  dimensions: { width: number; height: number },
  scale: number,
  work?: { nativeScale: number; passes?: number },
): OutputSize {
  const passes = work?.passes ?? 1;
  return {
    width: dimensions.width * scale ** passes,
    height: dimensions.height * scale ** passes,
    ...(work ? { modelPixels: dimensions.width * dimensions.height * work.nativeScale ** 2 * passes } : {}),
  };
}
