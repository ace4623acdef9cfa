/**
 * Stitch: crop the overlap off a tile's output and write it into the integer output raster. stitchTile takes
 * the model's float output (clamped and rounded on the way); pasteCore takes a tile already in integer form
 * (resized to the requested scale). Only one tile is ever held as float.
 */
import type { ByteTensorResult, TensorResult } from '../inference/index.js';
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
 *
 * 8-bit: the arithmetic of a model's 8-bit ends (onnx/byteIo.ts: QuantizeLinear, x divided by float32 1/255 in
 * float32, rounded half to even, saturated), so a pixel is the same whichever path made it (alpha planes and models
 * without 8-bit ends come through here). A double quotient of two float32s rounded to float32 is the float32
 * quotient, so v = fround(x / STEP8) is exactly onnxruntime's; v is exact in a double, so v + 0.5 is exact and
 * (v + 0.5) | 0 rounds half up; a tie (r − v = 0.5) that went up to an odd level goes back down. NaN gives 0.
 */
/** One 8-bit level as a float32: QuantizeLinear's scale in onnx/byteIo.ts. */
const STEP8 = Math.fround(1 / 255);

/** A model's float output value (0..1) as the byte the app writes; the one 8-bit rounding (judges use it too). */
export function toByte(x: number): number {
  const v = Math.fround(x / STEP8);
  const r = v <= 0 ? 0 : v >= 255 ? 255 : (v + 0.5) | 0;
  return r - v === 0.5 && (r & 1) === 1 ? r - 1 : r;
}

function stitch8(dst: Uint8Array, src: Float32Array, g: StitchGeometry): void {
  for (let y = 0; y < g.ch; y++) {
    let s = (g.y0 + y) * g.ow + g.x0;
    let d = ((g.oy + y) * g.tw + g.ox) * g.tc + g.channelOffset;
    for (let x = 0; x < g.cw; x++, s++, d += g.tc) {
      for (let c = 0, sc = s; c < g.channelCount; c++, sc += g.plane) dst[d + c] = toByte(src[sc]!);
    }
  }
}

/*
 * 16-bit: (v + 0.5) | 0 is Math.round(v) for 0 < v < max: v is a float32 times 65535, exact in a double, so
 * v + 0.5 is exact too; NaN gives 0 either way.
 */

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

/**
 * Stitches a tile that is already 8-bit RGB rows (a session with 8-bit ends clamped and rounded it in the graph):
 * each core row is one copy into an RGB target; an RGBA target takes the three channels pixel by pixel (its
 * alpha comes from a run of its own). `target` is 8-bit.
 */
export function stitchBytes(target: Raster, out: ByteTensorResult, tile: Tile, scale: number): void {
  const ow = out.dims[2];
  const x0 = (tile.x - tile.px) * scale;
  const y0 = (tile.y - tile.py) * scale;
  const cw = tile.w * scale;
  const ox = tile.x * scale;
  const oy = tile.y * scale;
  const tc = target.channels;
  const dst = target.data as Uint8Array;
  const src = out.data;
  for (let y = 0; y < tile.h * scale; y++) {
    let s = ((y0 + y) * ow + x0) * 3;
    let d = ((oy + y) * target.width + ox) * tc;
    if (tc === 3) {
      dst.set(src.subarray(s, s + cw * 3), d);
      continue;
    }
    for (let x = 0; x < cw; x++, s += 3, d += tc) {
      dst[d] = src[s]!;
      dst[d + 1] = src[s + 1]!;
      dst[d + 2] = src[s + 2]!;
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
