/**
 * Stitch: crop the overlap off a tile's output and write it into the integer output raster. stitchTile takes
 * the model's float output (clamped and rounded on the way); pasteCore takes a tile already in integer form
 * (resized to the requested scale). Only one tile is ever held as float.
 */
import type { TensorResult } from '../inference/index.js';
import { maxValue, type Raster } from './raster.js';
import type { Tile } from './tiles.js';

/**
 * @param channelOffset first channel of `target` to write (0 for RGB, 3 for the alpha of RGBA)
 * @param channelCount how many model output channels to write (3 for RGB, 1 for alpha: the replicated
 *        alpha comes back in all three, the first is taken)
 */
export function stitchTile(
  target: Raster,
  out: TensorResult,
  tile: Tile,
  scale: number,
  channelOffset: number,
  channelCount: number,
): void {
  const [, , oh, ow] = out.dims;
  const plane = oh * ow;
  const max = maxValue(target.depth);
  const dst = target.data;
  const tc = target.channels;
  const x0 = (tile.x - tile.px) * scale;
  const y0 = (tile.y - tile.py) * scale;
  const cw = tile.w * scale;
  const ch = tile.h * scale;
  const ox = tile.x * scale;
  const oy = tile.y * scale;
  const src = out.data;
  for (let c = 0; c < channelCount; c++) {
    const base = c * plane;
    for (let y = 0; y < ch; y++) {
      let s = base + (y0 + y) * ow + x0;
      let d = ((oy + y) * target.width + ox) * tc + channelOffset + c;
      for (let x = 0; x < cw; x++, s++, d += tc) {
        const v = (src[s] ?? 0) * max;
        dst[d] = v <= 0 ? 0 : v >= max ? max : Math.round(v);
      }
    }
  }
}

/** The whole padded region of `tile` as a tile of its own, at the origin: stitches a full model output. */
export function paddedAsCore(tile: Tile): Tile {
  return { x: 0, y: 0, w: tile.pw, h: tile.ph, px: 0, py: 0, pw: tile.pw, ph: tile.ph };
}

/**
 * Copies the core of a padded tile that is already at `scale` (size pw·scale × ph·scale, same channels and
 * depth as `target`) into place. Rows are contiguous in both rasters, so each is one typed-array copy.
 */
export function pasteCore(target: Raster, padded: Raster, tile: Tile, scale: number): void {
  const tc = target.channels;
  const rowLen = tile.w * scale * tc;
  const x0 = (tile.x - tile.px) * scale;
  const y0 = (tile.y - tile.py) * scale;
  const ox = tile.x * scale;
  const oy = tile.y * scale;
  for (let y = 0; y < tile.h * scale; y++) {
    const s = ((y0 + y) * padded.width + x0) * tc;
    target.data.set(padded.data.subarray(s, s + rowLen), ((oy + y) * target.width + ox) * tc);
  }
}
