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
 *
 * Two ways through the model, the same bytes out (test/engine/byteIo.test.ts): 8-bit RGB through a session with
 * 8-bit ends (onnx/byteIo.ts: normalising, layout, clamping and rounding happen in the graph, tile in and out are
 * row copies), and float NCHW for everything else (16-bit images, alpha planes, models the rule refuses), with
 * tileInput's and stitch.ts's loops.
 */
import { blockAtPoint, holdPoint, runPoint } from '../testGate.js';
import type { ByteTensorResult, ModelSession, TensorResult } from '../inference/index.js';
import type { TileTurn } from '../tileTurns.js';
import type { StageClock } from './stageTimes.js';
import type { OutputRaster } from './diskRaster.js';
import type { InputBand, InputRaster } from './inputRaster.js';
import { allocRaster, maxValue, type Raster } from './raster.js';
import { resizeRaster } from './resize.js';
import { pasteCore, paddedAsCore, stitchBytes, stitchTile } from './stitch.js';
import type { Tile, TilePlan } from './tiles.js';

export interface InferTilesOptions {
  /** The decoded input, read one tile row (plus overlap) at a time. */
  input: InputRaster;
  session: ModelSession;
  plan: TilePlan;
  /** The output: (width·scale × height·scale), 3 channels, or 4 with alpha; each finished tile is written once. */
  target: OutputRaster;
  /** Requested integer scale; tiles are resized from the native scale when it differs. */
  scale: number;
  signal?: AbortSignal;
  /** Called after each model run (one per tile, two with alpha) with the padded pixels it ran on. */
  onTile?: (pixels: number) => void;
  /** Called as each model run starts, with the padded pixels it runs on (progress.ts announces the step). */
  onRunStart?: (pixels: number) => void;
  /** Where the stage times go (tileIn, run, tileOut, resize). */
  clock?: StageClock;
  /** Each model run waits for its turn here (tileTurns.ts: other callers' jobs on this thread go in between). */
  turn?: TileTurn;
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
    if (sc === 1) {
      // An alpha plane goes through the network as grey RGB.
      for (let x = 0; x < pw; x++, s++, d++) {
        const v = src[s]! * inv;
        buf[d] = v;
        buf[plane + d] = v;
        buf[2 * plane + d] = v;
      }
    } else {
      for (let x = 0; x < pw; x++, s += sc, d++) {
        buf[d] = src[s]! * inv;
        buf[plane + d] = src[s + 1]! * inv;
        buf[2 * plane + d] = src[s + 2]! * inv;
      }
    }
  }
  return buf;
}

/**
 * The padded region of a tile as 8-bit RGB rows, for a session with 8-bit ends: a view of the band when the tile
 * spans whole rows (no copy at all), else one copy per row.
 */
export function tileBytes(source: Raster, tile: Tile): Uint8Array {
  const { px, py, pw, ph } = tile;
  const src = source.data as Uint8Array;
  const rowLen = pw * 3;
  if (px === 0 && pw === source.width) return src.subarray(py * rowLen, (py + ph) * rowLen);
  const buf = new Uint8Array(ph * rowLen);
  for (let y = 0; y < ph; y++) {
    const s = ((py + y) * source.width + px) * 3;
    buf.set(src.subarray(s, s + rowLen), y * rowLen);
  }
  return buf;
}

/** A model run's output: float NCHW (stitched with clamp and round), or 8-bit rows from a session's 8-bit ends. */
type TileOutput = { float: TensorResult } | { bytes: ByteTensorResult };

function stitchOutput(target: Raster, out: TileOutput, tile: Tile, scale: number, channelOffset: number): void {
  if ('bytes' in out) stitchBytes(target, out.bytes, tile, scale);
  else stitchTile(target, out.float, tile, scale, channelOffset, channelOffset === 3 ? 1 : 3);
}

/**
 * The same tile with its core at the origin: stitching or pasting with it fills a raster of just the core
 * (w·scale × h·scale), which then goes to the output in one writeRect.
 */
function coreAtOrigin(tile: Tile): Tile {
  return { ...tile, x: 0, y: 0, px: tile.px - tile.x, py: tile.py - tile.y };
}

/**
 * Tiles are taken row by row; each row reads one band of input rows (its padded span) and every tile's core is
 * written to the target as soon as it is done, so memory holds one input band and one tile.
 *
 * Serial on purpose: onnxruntime-node's session.run is one synchronous native call (it holds this thread's event
 * loop for the whole run, measured), so tile-out work on this thread cannot overlap a run. What overlaps is
 * across images: the encode (libvips threads) of one image runs while the next one infers (workerPool.ts).
 */
export async function inferTiles(o: InferTilesOptions): Promise<void> {
  const native = o.session.scale;
  const { target, scale, clock } = o;
  const time = <T>(stage: 'tileOut', fn: () => T): T => (clock ? clock.time(stage, fn) : fn());
  let band: { y: number; rows: number; data: InputBand } | undefined;

  const runNow = async (source: Raster, tile: Tile, index: number): Promise<TileOutput> => {
    o.signal?.throwIfAborted();
    // Rows of the band start at tile.py: the model reads the tile at the band's top.
    const inBand: Tile = { ...tile, y: tile.y - tile.py, py: 0 };
    // 8-bit RGB goes through the model's 8-bit ends where it has them; 16-bit images and alpha planes run on
    // float tensors (onnx/byteIo.ts says which models have them).
    const bytes = o.session.runBytes && source.depth === 8 && source.channels === 3 && target.depth === 8;
    const t0 = performance.now();
    const x = bytes ? tileBytes(source, inBand) : tileInput(source, inBand);
    const t1 = performance.now();
    clock?.add('tileIn', t1 - t0);
    o.onRunStart?.(tile.pw * tile.ph);
    o.signal?.throwIfAborted();
    // Test-only (CRISP_TEST_GATE_DIR; a no-op in production): holds this thread as a long native run would.
    blockAtPoint(runPoint(index));
    const out: TileOutput = bytes
      ? { bytes: await o.session.runBytes!(x as Uint8Array, tile.ph, tile.pw) }
      : { float: await o.session.run(x as Float32Array, 1, tile.ph, tile.pw) };
    clock?.add('run', performance.now() - t1);
    const [oh, ow] = 'bytes' in out ? [out.bytes.dims[1], out.bytes.dims[2]] : [out.float.dims[2], out.float.dims[3]];
    if (oh !== tile.ph * native || ow !== tile.pw * native) {
      throw new Error(
        `Model ${o.session.model.entry.model} returned ${ow}×${oh} for a ${tile.pw}×${tile.ph} tile; expected ×${native}`,
      );
    }
    o.onTile?.(tile.pw * tile.ph);
    return out;
  };
  const run = (source: Raster, tile: Tile, index: number): Promise<TileOutput> =>
    o.turn ? o.turn(() => runNow(source, tile, index)) : runNow(source, tile, index);

  for (const [index, tile] of o.plan.tiles.entries()) {
    // Test-only (CRISP_TEST_GATE_DIR; a no-op in production). No signal: a test that cancels here checks that
    // the run's own check, not the gate, stops the work between tiles.
    await holdPoint(`tile-${index}`);
    if (!band || band.y !== tile.py || band.rows !== tile.ph)
      band = { y: tile.py, rows: tile.ph, data: o.input.band(tile.py, tile.ph) };
    const { rgb, alpha } = band.data;
    if (scale === native && target.direct) {
      // Straight from float into the in-memory output: no intermediate raster, bit-identical to an untiled run.
      const out = await run(rgb, tile, index);
      time('tileOut', () => stitchOutput(target.direct!, out, tile, native, 0));
      if (alpha) {
        const a = await run(alpha, tile, index);
        time('tileOut', () => stitchOutput(target.direct!, a, tile, native, 3));
      }
      continue;
    }
    let core: Raster;
    if (scale === native) {
      core = allocRaster(tile.w * scale, tile.h * scale, target.channels, target.depth);
      const local = coreAtOrigin(tile);
      const out = await run(rgb, tile, index);
      time('tileOut', () => stitchOutput(core, out, local, native, 0));
      if (alpha) {
        const a = await run(alpha, tile, index);
        time('tileOut', () => stitchOutput(core, a, local, native, 3));
      }
    } else {
      // RGB and alpha share one padded tile so the resize premultiplies alpha exactly as a whole-image
      // resize would; each float output is rounded into it before the next run (one float tile at a time).
      const whole = paddedAsCore(tile);
      const out = await run(rgb, tile, index);
      let padded: Raster;
      if ('bytes' in out && target.channels === 3) {
        // 8-bit RGB rows of the whole padded tile are already the raster to resize.
        padded = { data: out.bytes.data, width: tile.pw * native, height: tile.ph * native, channels: 3, depth: 8 };
      } else {
        padded = allocRaster(tile.pw * native, tile.ph * native, target.channels, target.depth);
        time('tileOut', () => stitchOutput(padded, out, whole, native, 0));
      }
      if (alpha) {
        const a = await run(alpha, tile, index);
        time('tileOut', () => stitchOutput(padded, a, whole, native, 3));
      }
      const t0 = performance.now();
      core = allocRaster(tile.w * scale, tile.h * scale, target.channels, target.depth);
      pasteCore(core, await resizeRaster(padded, tile.pw * scale, tile.ph * scale), coreAtOrigin(tile), scale);
      clock?.add('resize', performance.now() - t0);
    }
    time('tileOut', () => target.writeRect(tile.x * scale, tile.y * scale, core));
  }
}
