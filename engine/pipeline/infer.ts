/**
 * Infer: run every tile of a plan through the model and stitch the results into the output raster.
 *
 * When the requested scale s differs from the model's native scale n, each padded tile's output is resized
 * to s before it is stitched, so the only full-size buffer is the final one (an n× raster of a 24 MP photo
 * would be 384 MP, however small the requested output). This equals resizing the whole n× image: a padded
 * tile covering input [x0, x1) is [n·x0, n·x1) natively and [s·x0, s·x1) in the output, so the tile's
 * resample grid is the whole image's grid shifted by whole pixels; it differs only where the Lanczos kernel
 * reaches past the tile's edge, and that lies in the overlap that is cropped off (16 input px = 16·n native px
 * of overlap, against a Lanczos-3 reach of 3·max(1, n/s) native px).
 */
import type { ModelSession, TensorResult } from '../inference/index.js';
import { allocRaster, maxValue, type Raster } from './raster.js';
import { resizeRaster } from './resize.js';
import { pasteCore, paddedAsCore, stitchTile } from './stitch.js';
import type { Tile, TilePlan } from './tiles.js';

export interface InferTilesOptions {
  /** Interleaved RGB, channels = 3. */
  rgb: Raster;
  /** Alpha plane (channels = 1): goes through the network too (replicated into RGB) into channel 4. */
  alpha?: Raster;
  session: ModelSession;
  plan: TilePlan;
  /** The output: (width·scale × height·scale), 3 channels, or 4 with alpha. */
  target: Raster;
  /** Requested integer scale; tiles are resized from the native scale when it differs. */
  scale: number;
  signal?: AbortSignal;
  /** Called after each model run (one per tile, two with alpha). */
  onTile?: () => void;
}

/** Planar float32 [1,3,ph,pw] in 0..1 for the padded region of a tile. */
export function tileInput(source: Raster, tile: Tile): Float32Array {
  const { px, py, pw, ph } = tile;
  const plane = pw * ph;
  const buf = new Float32Array(3 * plane);
  const inv = 1 / maxValue(source.depth);
  const sc = source.channels;
  const src = source.data;
  for (let y = 0; y < ph; y++) {
    let s = ((py + y) * source.width + px) * sc;
    let d = y * pw;
    for (let x = 0; x < pw; x++, s += sc, d++) {
      if (sc === 1) {
        const v = (src[s] ?? 0) * inv;
        buf[d] = v;
        buf[plane + d] = v;
        buf[2 * plane + d] = v;
      } else {
        buf[d] = (src[s] ?? 0) * inv;
        buf[plane + d] = (src[s + 1] ?? 0) * inv;
        buf[2 * plane + d] = (src[s + 2] ?? 0) * inv;
      }
    }
  }
  return buf;
}

async function runTile(o: InferTilesOptions, source: Raster, tile: Tile): Promise<TensorResult> {
  o.signal?.throwIfAborted();
  const native = o.session.scale;
  const out = await o.session.run(tileInput(source, tile), 1, tile.ph, tile.pw);
  if (out.dims[2] !== tile.ph * native || out.dims[3] !== tile.pw * native) {
    throw new Error(`Model ${o.session.model.entry.model} returned ${out.dims[3]}×${out.dims[2]} for a ${tile.pw}×${tile.ph} tile; expected ×${native}`);
  }
  return out;
}

export async function inferTiles(o: InferTilesOptions): Promise<void> {
  const native = o.session.scale;
  const { target, scale } = o;
  for (const tile of o.plan.tiles) {
    if (scale === native) {
      // Straight from float into place: no intermediate tile raster, bit-identical to an untiled run.
      stitchTile(target, await runTile(o, o.rgb, tile), tile, native, 0, 3);
      o.onTile?.();
      if (o.alpha) {
        stitchTile(target, await runTile(o, o.alpha, tile), tile, native, 3, 1);
        o.onTile?.();
      }
      continue;
    }
    // RGB and alpha share one padded tile so the resize premultiplies alpha exactly as a whole-image
    // resize would; each float output is rounded into it before the next run (one float tile at a time).
    const padded = allocRaster(tile.pw * native, tile.ph * native, target.channels, target.depth);
    const whole = paddedAsCore(tile);
    stitchTile(padded, await runTile(o, o.rgb, tile), whole, native, 0, 3);
    o.onTile?.();
    if (o.alpha) {
      stitchTile(padded, await runTile(o, o.alpha, tile), whole, native, 3, 1);
      o.onTile?.();
    }
    pasteCore(target, await resizeRaster(padded, tile.pw * scale, tile.ph * scale), tile, scale);
  }
}
