/**
 * Tile plan (Real-ESRGAN style): the image is cut into a grid of near-equal tiles; each tile is run with an
 * extra `overlap` margin of real context on every side (clipped at the image edge) and the margin is cropped
 * off the output. Every output pixel then sees at least `overlap` input pixels of context, so seams vanish.
 */
import type { ExecutionProvider, Precision } from '../inference/index.js';

export interface Tile {
  /** Core region, in input pixels: what this tile contributes to the output. */
  x: number;
  y: number;
  w: number;
  h: number;
  /** Padded region fed to the model (core + overlap, clipped to the image). */
  px: number;
  py: number;
  pw: number;
  ph: number;
}

export interface TilePlan {
  width: number;
  height: number;
  tileSize: number;
  overlap: number;
  tiles: Tile[];
}

/** Context margin in input pixels. 16 keeps tiled output within a few hundredths of a dB of untiled. */
export const DEFAULT_OVERLAP = 16;

/**
 * Largest tile, in input pixels, per provider and precision, from measurement. On the CPU, time is linear in
 * pixels, so tiles only need to bound memory (activations are ~64 floats per pixel: 512² ≈ 70 MB per layer), at
 * any precision. On a GPU, `session.run` per pixel was measured on an H100 with WebGPU (issue 37, realesr-general-x4v3,
 * median of 5; µs per input pixel):
 *
 * | tile            | 256² | 384² | 512² | 768² | 1024²    | 540×960 | 720×1280 |
 * | fp32            | 0.38 | 0.28 | 0.39 | 0.36 | **0.98** | 0.36    | **1.01** |
 * | fp16 graph      | 0.40 | 0.27 | 0.34 | 0.33 | 0.32     | 0.33    | 0.31     |
 *
 * fp32 falls off a cliff at ~0.9 MP per tile (2.7× slower per pixel), so its tiles stay at 768² (0.59 MP), the
 * largest measured below it; fp16 had no cliff up to the largest tiles measured, 1024² and 720×1280, so its tiles
 * go to 1000² (1 MP: a whole 720×1280 frame, and square tiles stay under the 1024-pixel side where RGT's reference
 * would reduce its attention keys once more than its graph does; docs/models.md). Larger is unmeasured. CUDA, DirectML and CoreML have no measurement yet: they take the
 * WebGPU figures, the only GPU ones there are. Larger tiles mean fewer overlap margins run twice.
 */
const CPU_TILE_PIXELS = 512 * 512;
const GPU_TILE_PIXELS: Record<Precision, number> = {
  fp32: 768 * 768,
  fp16: 1000 * 1000,
  // int8 runs only on the CPU provider (precision.ts); were a GPU ever given it, fp32's measured limit holds.
  int8: 768 * 768,
};

export function tileBudget(provider: ExecutionProvider, precision: Precision = 'fp32'): number {
  return provider === 'cpu' ? CPU_TILE_PIXELS : GPU_TILE_PIXELS[precision];
}

/**
 * The default tile side: the largest side whose even split (planTiles) keeps every tile within the provider's
 * and precision's pixel budget. Fewer, larger tiles mean less overlap run twice: a 960×540 image on the CPU is 2 tiles of
 * 480×540 (+3 % pixels run) instead of 4 of 480×270 (+19 %).
 */
export function chooseTileSize(
  width: number,
  height: number,
  provider: ExecutionProvider,
  precision: Precision = 'fp32',
): number {
  const budget = tileBudget(provider, precision);
  if (width * height <= budget) return Math.max(width, height);
  // planTiles' grid changes only at sides ceil(len / n): try those, largest first.
  const sides = new Set<number>();
  for (let n = 1; Math.ceil(width / n) >= 16 || Math.ceil(height / n) >= 16; n++) {
    sides.add(Math.ceil(width / n));
    sides.add(Math.ceil(height / n));
  }
  for (const side of [...sides].filter((v) => v >= 16).sort((a, b) => b - a)) {
    const tw = Math.ceil(width / Math.ceil(width / side));
    const th = Math.ceil(height / Math.ceil(height / side));
    if (tw * th <= budget) return side;
  }
  return 16;
}

/**
 * Grows a padded span [p0, p0 + len) inside [0, total) to a multiple of `window` where the image allows (right
 * first, then left): a window-attention model pads its input to that multiple anyway, so the extra pixels are
 * real context instead of zeros, at no extra cost.
 */
function alignSpan(p0: number, len: number, total: number, window: number): [number, number] {
  if (window <= 1) return [p0, len];
  const want = Math.min(total, Math.ceil(len / window) * window);
  const right = Math.min(total, p0 + want) - (p0 + len);
  const left = Math.min(p0, want - len - right);
  return [p0 - left, len + right + left];
}

/**
 * @param window the side the model's input must be a multiple of (architecture window, 1 for CNNs; see
 *        an architecture's `tiling` in engine/convert/architectures/): padded tiles are grown to it where the image allows.
 */
export function planTiles(
  width: number,
  height: number,
  tileSize: number,
  overlap = DEFAULT_OVERLAP,
  window = 1,
): TilePlan {
  const size = Math.max(16, Math.floor(tileSize));
  // Split evenly so the last tile is not a sliver (same work per call, less padding waste).
  const nx = Math.ceil(width / size);
  const ny = Math.ceil(height / size);
  const tw = Math.ceil(width / nx);
  const th = Math.ceil(height / ny);
  const tiles: Tile[] = [];
  for (let ty = 0; ty < ny; ty++) {
    for (let tx = 0; tx < nx; tx++) {
      const x = tx * tw;
      const y = ty * th;
      const w = Math.min(tw, width - x);
      const h = Math.min(th, height - y);
      if (w <= 0 || h <= 0) continue;
      const [px, pw] = alignSpan(
        Math.max(0, x - overlap),
        Math.min(width, x + w + overlap) - Math.max(0, x - overlap),
        width,
        window,
      );
      const [py, ph] = alignSpan(
        Math.max(0, y - overlap),
        Math.min(height, y + h + overlap) - Math.max(0, y - overlap),
        height,
        window,
      );
      tiles.push({ x, y, w, h, px, py, pw, ph });
    }
  }
  return { width, height, tileSize: size, overlap, tiles };
}
