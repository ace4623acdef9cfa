/**
 * Exact output geometry: a size asked for instead of a scale factor (`--width`, `--height`, both = a box the
 * image fits inside, `--long-side`), the exact size it gives an image, and the integer model scale that
 * reaches it. Pure arithmetic, no npm package: the engine's pipeline, the app (Cloud's scale and price) and
 * the renderer (the size shown before a run) compute the same numbers from here.
 *
 * The size keeps the image's aspect; the side that is not given is rounded to the nearest pixel, at least 1:
 * `--width W` gives exactly W × round(h·W/w).
 */
import { SCALES } from './enums.js';

/** Which sides are fixed; absent fields are free. `longSide` excludes `width` and `height`. */
export interface SizeRequest {
  width?: number;
  height?: number;
  longSide?: number;
}

export interface Size {
  width: number;
  height: number;
}

/** The largest integer model scale (the contract's largest scale): a size that needs more is refused. */
export const MAX_MODEL_SCALE: number = SCALES[SCALES.length - 1]!;

/** The request of a set of nullable options (settings, CLI flags); undefined when none is set. */
export function sizeRequestOf(o: {
  width?: number | null | undefined;
  height?: number | null | undefined;
  longSide?: number | null | undefined;
}): SizeRequest | undefined {
  const r: SizeRequest = {
    ...(o.width != null ? { width: o.width } : {}),
    ...(o.height != null ? { height: o.height } : {}),
    ...(o.longSide != null ? { longSide: o.longSide } : {}),
  };
  return Object.keys(r).length > 0 ? r : undefined;
}

/** A sentence when the request cannot be met whatever the image (not a positive integer, long side with a side). */
export function sizeRequestProblem(r: SizeRequest): string | undefined {
  for (const [key, flag] of [
    ['width', '--width'],
    ['height', '--height'],
    ['longSide', '--long-side'],
  ] as const) {
    const v = r[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 1)) {
      return `${flag} must be a whole number of pixels, 1 or more, not ${String(v)}.`;
    }
  }
  if (r.longSide !== undefined && (r.width !== undefined || r.height !== undefined)) {
    return '--long-side sets both sides already: give it alone, or --width and/or --height instead.';
  }
  return undefined;
}

const side = (v: number) => Math.max(1, Math.round(v));

/** The exact output size of a w×h image under the request (aspect kept; the free side rounded). */
export function targetSize(w: number, h: number, r: SizeRequest): Size {
  if (r.longSide !== undefined) {
    return w >= h
      ? { width: r.longSide, height: side((h * r.longSide) / w) }
      : { width: side((w * r.longSide) / h), height: r.longSide };
  }
  if (r.width !== undefined && r.height !== undefined) {
    // A box: the side that limits first is exact, the other fits inside.
    return r.width * h <= r.height * w
      ? { width: r.width, height: Math.min(r.height, side((h * r.width) / w)) }
      : { width: Math.min(r.width, side((w * r.height) / h)), height: r.height };
  }
  if (r.width !== undefined) return { width: r.width, height: side((h * r.width) / w) };
  if (r.height !== undefined) return { width: side((w * r.height) / h), height: r.height };
  return { width: w, height: h };
}

/** The smallest integer scale s with s·w ≥ target.width and s·h ≥ target.height (at least 1). */
export function scaleToReach(w: number, h: number, target: Size): number {
  return Math.max(1, Math.ceil(target.width / w), Math.ceil(target.height / h));
}

/**
 * The model scale the local engine runs at for a target: the model's native scale when its output already
 * reaches the target (then the only resample is the final one), else the smallest integer scale that does
 * (the pipeline resizes each tile from the native scale to it). May exceed MAX_MODEL_SCALE: the caller refuses.
 */
export function modelScaleFor(w: number, h: number, target: Size, nativeScale: number): number {
  const need = scaleToReach(w, h, target);
  return need <= nativeScale ? nativeScale : need;
}

/** "width 1000", "1000×800 box", "long side 2048": the request in words (messages, the CLI). */
export function describeSizeRequest(r: SizeRequest): string {
  if (r.longSide !== undefined) return `long side ${r.longSide}`;
  if (r.width !== undefined && r.height !== undefined) return `${r.width}×${r.height} box`;
  if (r.width !== undefined) return `width ${r.width}`;
  if (r.height !== undefined) return `height ${r.height}`;
  return 'the scale';
}
