/**
 * Paste: the restored crop back into a rectangle of the upscaled image. A pure function of (region pixels,
 * face data) → region pixels, so it works on an in-memory output and on a disk-backed one read and written
 * a region at a time.
 *
 * The mask is facexlib's (a square the size of the crop, eroded, then blurred in proportion to the face) in
 * closed form: a similarity transform keeps squares square and blurs round, so eroding and feathering the
 * square in crop coordinates is the same as doing it in the output. The feather is a smoothstep with compact
 * support, so every pixel outside it keeps the plain upscale's value bit for bit.
 */
import { maxValue, type Raster } from '../pipeline/raster.js';
import { applyAffine, composeAffine, invertAffine, outputToInput, type Affine } from './geometry.js';

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface FacePaste {
  /** Input pixel → crop pixel. */
  toFace: Affine;
  /** Restored crop, planar [3, size, size] RGB in [−1, 1]. */
  restored: Float32Array;
  size: number;
}

/** Mask ramps, as fractions of the crop side (facexlib: edge = √area / 20, erode by it, blur over 2×). */
const ERODE = 1 / 40;
const FEATHER = 1 / 10;

function ramp(t: number, size: number): number {
  const lo = size * ERODE;
  const hi = size * (ERODE + FEATHER);
  const d = Math.min(t, size - 1 - t);
  if (d <= lo) return 0;
  if (d >= hi) return 1;
  const s = (d - lo) / (hi - lo);
  return s * s * (3 - 2 * s);
}

/** Crop-space mask weight (0..1) at crop coordinates (u, v). */
export function faceMask(u: number, v: number, size: number): number {
  return ramp(u, size) * ramp(v, size);
}

/** The output rectangle a face can change (clipped to the output), or null when it lies outside. */
export function faceOutputRect(
  p: Pick<FacePaste, 'toFace' | 'size'>,
  scale: number,
  outWidth: number,
  outHeight: number,
): Rect | null {
  const toOutput = invertAffine(composeAffine(p.toFace, outputToInput(scale)));
  const s = p.size - 1;
  const corners = [
    applyAffine(toOutput, { x: 0, y: 0 }),
    applyAffine(toOutput, { x: s, y: 0 }),
    applyAffine(toOutput, { x: 0, y: s }),
    applyAffine(toOutput, { x: s, y: s }),
  ];
  const x0 = Math.max(0, Math.floor(Math.min(...corners.map((c) => c.x))));
  const y0 = Math.max(0, Math.floor(Math.min(...corners.map((c) => c.y))));
  const x1 = Math.min(outWidth, Math.ceil(Math.max(...corners.map((c) => c.x))) + 1);
  const y1 = Math.min(outHeight, Math.ceil(Math.max(...corners.map((c) => c.y))) + 1);
  return x1 > x0 && y1 > y0 ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : null;
}

/**
 * Blends the restored face into `region` (a rectangle of the output at `origin`, 3 or 4 channels; alpha is
 * never touched) in place: out = up + strength·mask·(restored − up), rounded. Answers how many pixels changed
 * weight (> 0), which is 0 when the face does not reach the region.
 */
export function pasteFace(
  region: Raster,
  origin: { x: number; y: number },
  face: FacePaste,
  scale: number,
  strength: number,
): number {
  if (strength <= 0) return 0;
  const toFace = composeAffine(face.toFace, outputToInput(scale));
  const { size, restored } = face;
  const plane = size * size;
  const max = maxValue(region.depth);
  const half = max / 2;
  const ch = region.channels;
  const data = region.data;
  let touched = 0;
  for (let y = 0; y < region.height; y++) {
    const oy = origin.y + y;
    for (let x = 0; x < region.width; x++) {
      const ox = origin.x + x;
      const u = toFace[0] * ox + toFace[1] * oy + toFace[2];
      const v = toFace[3] * ox + toFace[4] * oy + toFace[5];
      if (u <= 0 || v <= 0 || u >= size - 1 || v >= size - 1) continue;
      const m = faceMask(u, v, size) * strength;
      if (m <= 0) continue;
      touched++;
      const u0 = Math.floor(u),
        v0 = Math.floor(v);
      const fu = u - u0,
        fv = v - v0;
      const i00 = v0 * size + u0;
      const d = (y * region.width + x) * ch;
      for (let c = 0; c < 3; c++) {
        const b = c * plane + i00;
        const top = restored[b]! * (1 - fu) + restored[b + 1]! * fu;
        const bottom = restored[b + size]! * (1 - fu) + restored[b + size + 1]! * fu;
        const r = (top * (1 - fv) + bottom * fv + 1) * half;
        const up = data[d + c]!;
        const val = Math.round(up + m * (r - up));
        data[d + c] = val < 0 ? 0 : val > max ? max : val;
      }
    }
  }
  return touched;
}
