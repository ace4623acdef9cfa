/** Infer: run every tile of a plan through the model and stitch the results into the output raster. */
import type { ModelSession } from '../inference/index.js';
import { maxValue, type Raster } from './raster.js';
import { stitchTile } from './stitch.js';
import type { Tile, TilePlan } from './tiles.js';

export interface InferTilesOptions {
  /** Interleaved source: 3 channels (RGB) or 1 (alpha, replicated into RGB for the model). */
  source: Raster;
  session: ModelSession;
  plan: TilePlan;
  target: Raster;
  channelOffset: number;
  signal?: AbortSignal;
  /** Called after each tile. */
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

export async function inferTiles(o: InferTilesOptions): Promise<void> {
  const scale = o.session.scale;
  const channelCount = o.source.channels === 1 ? 1 : 3;
  for (const tile of o.plan.tiles) {
    o.signal?.throwIfAborted();
    const out = await o.session.run(tileInput(o.source, tile), 1, tile.ph, tile.pw);
    if (out.dims[2] !== tile.ph * scale || out.dims[3] !== tile.pw * scale) {
      throw new Error(`Model ${o.session.model.entry.model} returned ${out.dims[3]}×${out.dims[2]} for a ${tile.pw}×${tile.ph} tile; expected ×${scale}`);
    }
    stitchTile(o.target, out, tile, scale, o.channelOffset, channelCount);
    o.onTile?.();
  }
}
