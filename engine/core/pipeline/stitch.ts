/**
 * Stitch: crop the overlap off a tile's output and write it into the integer output raster. stitchTile takes
 * the model's float output (clamped and rounded on the way); pasteCore takes a tile already in integer form
 * (resized to the requested scale). Only one tile is ever held as float.
 */
import type { TensorResult } from '../inference/index.js';
import type { Raster } from './raster.js';
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
  const g: StitchGeometry = {
    plane: oh * ow,
    ow,
    x0: (tile.x - tile.px) * scale,
    y0: (tile.y - tile.py) * scale,
    cw: tile.w * scale,
    ch: tile.h * scale,
    ox: tile.x * scale,
    oy: tile.y * scale,
    tw: target.width,
    tc: target.channels,
    channelOffset,
    channelCount,
  };
  // One loop per element type: a loop that sees both Uint8Array and Uint16Array targets is polymorphic and
  // runs at half the speed (measured), and this loop touches every output value.
  if (target.data instanceof Uint8Array) stitch8(target.data, out.data, g);
  else stitch16(target.data, out.data, g);
}

interface StitchGeometry {
  plane: number;
  ow: number;
  x0: number;
  y0: number;
  cw: number;
  ch: number;
  ox: number;
  oy: number;
  tw: number;
  tc: number;
  channelOffset: number;
  channelCount: number;
}

/*
 * Clamp and round, pixel by pixel (all of a pixel's channels, so each output byte is written once, in order).
 * (v + 0.5) | 0 is Math.round(v) for 0 < v < max: v is a float32 times 255 or 65535, exact in a double, so
 * v + 0.5 is exact too; NaN gives 0 either way.
 */
function stitch8(dst: Uint8Array, src: Float32Array, g: StitchGeometry): void {
  const max = 255;
  for (let y = 0; y < g.ch; y++) {
    let s = (g.y0 + y) * g.ow + g.x0;
    let d = ((g.oy + y) * g.tw + g.ox) * g.tc + g.channelOffset;
    for (let x = 0; x < g.cw; x++, s++, d += g.tc) {
      for (let c = 0, sc = s; c < g.channelCount; c++, sc += g.plane) {
        const v = src[sc]! * max;
        dst[d + c] = v <= 0 ? 0 : v >= max ? max : (v + 0.5) | 0;
      }
    }
  }
}

function stitch16(dst: Uint16Array, src: Float32Array, g: StitchGeometry): void {
  const max = 65535;
  for (let y = 0; y < g.ch; y++) {
    let s = (g.y0 + y) * g.ow + g.x0;
    let d = ((g.oy + y) * g.tw + g.ox) * g.tc + g.channelOffset;
    for (let x = 0; x < g.cw; x++, s++, d += g.tc) {
      for (let c = 0, sc = s; c < g.channelCount; c++, sc += g.plane) {
        const v = src[sc]! * max;
        dst[d + c] = v <= 0 ? 0 : v >= max ? max : (v + 0.5) | 0;
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
