/**
 * The pipeline around the model (issue 37): in a batch, the next image's inference runs while the previous one
 * encodes (held with the test gate, no timing); the tile loop's output is the serial one whatever order runs
 * finish in; the stitch loop is exactly the clamp-and-round it replaced; the default tile policy cuts fewer
 * tiles; every result says where its time went.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Inference, ModelSession, TensorResult } from '../../engine/core/inference/index.js';
import { resolveModel, type ResolvedModel } from '../../engine/core/models/catalog.js';
import {
  chooseTileSize,
  inferTiles,
  memoryInput,
  MemoryRaster,
  planTiles,
  stitchTile,
  upscaleImage,
  type DecodedImage,
  type OutputRaster,
  type Raster,
} from '../../engine/core/pipeline/index.js';
import { allocRaster } from '../../engine/core/pipeline/raster.js';
import { STAGES } from '../../engine/core/pipeline/stageTimes.js';
import { createCore, type UpscaleFileJob } from '../../engine/core/index.js';
import { encodePoint } from '../../engine/core/testGate.js';
import { FAST_MODEL } from '../helpers/engineHarness.js';
import { createTestGate } from '../helpers/testGate.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';

const model = resolveModel(FAST_MODEL, [MODELS_DIR]) as ResolvedModel;

/** ×4 nearest-neighbour "network" with a per-position ripple, recording when each run starts and ends. */
function recordingSession(events: string[], gate?: (run: number) => Promise<void>): ModelSession {
  let n = 0;
  return {
    model,
    provider: 'cpu',
    scale: 4,
    async run(input: Float32Array, _n: number, h: number, w: number): Promise<TensorResult> {
      const k = n++;
      events.push(`run ${k} start`);
      await gate?.(k);
      const oh = h * 4;
      const ow = w * 4;
      const out = new Float32Array(3 * oh * ow);
      for (let c = 0; c < 3; c++)
        for (let y = 0; y < oh; y++)
          for (let x = 0; x < ow; x++)
            out[c * oh * ow + y * ow + x] = input[c * h * w + (y >> 2) * w + (x >> 2)]! + ((x + y) % 5) * 0.001;
      events.push(`run ${k} end`);
      return { data: out, dims: [1, 3, oh, ow] };
    },
  };
}

/** An output that is not in memory (no `direct`), so every tile arrives through writeRect, in order. */
function spyOutput(width: number, height: number, events: string[]): OutputRaster & { raster: Raster } {
  const inner = new MemoryRaster(allocRaster(width, height, 3, 8));
  let tiles = 0;
  return {
    width,
    height,
    channels: 3,
    depth: 8,
    raster: inner.raster,
    writeRect(x, y, r) {
      inner.writeRect(x, y, r);
      events.push(`tile ${tiles++} written`);
    },
    readRect: (x, y, w, h) => inner.readRect(x, y, w, h),
  };
}

let tmp: string;
let photo: Raster;
/** The photo as the tile loop reads it (only rgb is read). */
const photoInput = () => memoryInput({ rgb: photo } as DecodedImage);
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'crisp-pipelined-'));
  const { data, info } = await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
    .extract({ left: 40, top: 60, width: 150, height: 100 })
    .raw()
    .toBuffer({ resolveWithObject: true });
  photo = { data: new Uint8Array(data), width: info.width, height: info.height, channels: 3, depth: 8 };
});
afterAll(async () => rm(tmp, { recursive: true, force: true }));

describe('tile loop', () => {
  it('gives the serial output byte for byte, whatever order the runs finish in', async () => {
    const plan = planTiles(photo.width, photo.height, 64);
    // Serial reference: each tile run, then stitched into place, one after the other.
    const serial = allocRaster(photo.width * 4, photo.height * 4, 3, 8);
    const session = recordingSession([]);
    for (const tile of plan.tiles) {
      const { tileInput } = await import('../../engine/core/pipeline/index.js');
      const out = await session.run(tileInput(photo, tile), 1, tile.ph, tile.pw);
      stitchTile(serial, out, tile, 4, 0, 3);
    }
    // Pipelined, with every run held until the test lets it go, so runs and stitches interleave differently.
    const releases: Array<() => void> = [];
    const held = recordingSession([], () => new Promise<void>((r) => releases.push(r)));
    const target = new MemoryRaster(allocRaster(photo.width * 4, photo.height * 4, 3, 8));
    const done = inferTiles({ input: photoInput(), session: held, plan, target, scale: 4 });
    let settled = false;
    void done.finally(() => (settled = true));
    while (!settled) {
      await new Promise((r) => setImmediate(r));
      releases.shift()?.();
    }
    await done;
    expect(Buffer.from(target.raster.data).equals(Buffer.from(serial.data))).toBe(true);
  });

  it('a failing run while the previous tile is stitched fails the job once, with nothing left running', async () => {
    const events: string[] = [];
    const base = recordingSession(events);
    let runs = 0;
    const failing: ModelSession = {
      ...base,
      run: async (...a) => {
        if (++runs === 3) throw new Error('injected failure in run 3');
        return base.run(...a);
      },
    };
    const target = spyOutput(photo.width * 4, photo.height * 4, events);
    await expect(
      inferTiles({
        input: photoInput(),
        session: failing,
        plan: planTiles(photo.width, photo.height, 64),
        target,
        scale: 4,
      }),
    ).rejects.toThrow('injected failure in run 3');
    // Tiles 0 and 1 were written; the job stopped at the failed run.
    expect(events.filter((e) => e.endsWith('written'))).toEqual(['tile 0 written', 'tile 1 written']);
  });
});

describe('stitch', () => {
  /** The loop the fast one replaced: clamp, Math.round, channel by channel. */
  function naive(
    target: Raster,
    out: TensorResult,
    tile: ReturnType<typeof planTiles>['tiles'][number],
    s: number,
    off: number,
    count: number,
  ): void {
    const [, , oh, ow] = out.dims;
    const max = target.depth === 16 ? 65535 : 255;
    for (let c = 0; c < count; c++)
      for (let y = 0; y < tile.h * s; y++)
        for (let x = 0; x < tile.w * s; x++) {
          const v = out.data[c * oh * ow + ((tile.y - tile.py) * s + y) * ow + (tile.x - tile.px) * s + x]! * max;
          target.data[((tile.y * s + y) * target.width + tile.x * s + x) * target.channels + off + c] =
            v <= 0 ? 0 : v >= max ? max : Math.round(v);
        }
  }

  it('is exactly clamp-and-round in 8 and 16 bits, for RGB and for the alpha channel, NaN and halves included', () => {
    const tile = { x: 3, y: 2, w: 5, h: 4, px: 1, py: 0, pw: 9, ph: 8 };
    const s = 2;
    const oh = tile.ph * s;
    const ow = tile.pw * s;
    const data = new Float32Array(3 * oh * ow);
    for (let i = 0; i < data.length; i++) data[i] = ((i * 7919) % 1000) / 800 - 0.1;
    // Exact halves at both depths, NaN, ±Infinity, just outside the range.
    data.set([127.5 / 255, 0.5 / 255, 32767.5 / 65535, NaN, Infinity, -Infinity, 1.0000001, -0.0000001], 2 * ow + 4);
    const out: TensorResult = { data, dims: [1, 3, oh, ow] };
    for (const depth of [8, 16] as const)
      for (const [off, count] of [
        [0, 3],
        [3, 1],
      ] as const) {
        const a = allocRaster(20, 14, 4, depth);
        const b = allocRaster(20, 14, 4, depth);
        stitchTile(a, out, tile, s, off, count);
        naive(b, out, tile, s, off, count);
        expect(Array.from(a.data)).toEqual(Array.from(b.data));
      }
  });
});

describe('default tiles', () => {
  it('cut as few tiles as the pixel budget allows: 960×540 on the CPU is 2 tiles, not 4', () => {
    const side = chooseTileSize(960, 540, 'cpu');
    const plan = planTiles(960, 540, side);
    expect(plan.tiles).toHaveLength(2);
    expect(Math.max(...plan.tiles.map((t) => t.w * t.h))).toBeLessThanOrEqual(512 * 512);
    for (const [w, h] of [
      [4000, 3000],
      [100, 50_000],
      [513, 513],
      [20_000, 17],
    ]) {
      for (const [ep, budget] of [
        ['cpu', 512 * 512],
        ['webgpu', 768 * 768],
      ] as const) {
        const p = planTiles(w!, h!, chooseTileSize(w!, h!, ep));
        expect(Math.max(...p.tiles.map((t) => t.w * t.h))).toBeLessThanOrEqual(budget);
        // Never more tiles than square tiles of the budget's side would need.
        const side = Math.sqrt(budget);
        expect(p.tiles.length).toBeLessThanOrEqual(Math.ceil(w! / side) * Math.ceil(h! / side));
      }
    }
    expect(planTiles(400, 300, chooseTileSize(400, 300, 'cpu')).tiles).toHaveLength(1);
  });
});

describe('stage times', () => {
  it('every result says where its time went, stage by stage', async () => {
    const events: string[] = [];
    const session = recordingSession(events);
    const inference = {
      requested: 'cpu',
      session: async () => session,
      release: async () => undefined,
    } as unknown as Inference;
    const input = await sharp(photo.data, { raw: { width: photo.width, height: photo.height, channels: 3 } })
      .png()
      .toBuffer();
    const r = await upscaleImage(
      {
        input: { data: input },
        inputName: 'crop.png',
        model,
        scale: 4,
        format: 'png',
        compression: 0,
        outputPath: path.join(tmp, 'crop-x4.png'),
        tileSize: 64,
      },
      inference,
    );
    for (const stage of ['probe', 'session', 'decode', 'tileIn', 'run', 'tileOut', 'encode'] as const)
      expect(r.stages[stage], stage).toBeGreaterThanOrEqual(0);
    expect(Object.keys(r.stages).every((k) => k === 'wall' || (STAGES as readonly string[]).includes(k))).toBe(true);
    expect(r.stages.wall).toBeGreaterThan(0);
    expect(events.filter((e) => e.endsWith('start'))).toHaveLength(6);
  });
});

/** One image of a batch through the core: the 64×64 butterfly at ×4 into `folder`, under `name`. */
const batchJob = (folder: string, name: string): UpscaleFileJob => ({
  inputPath: path.join(IMAGES_DIR, 'set5-x4', 'lr', 'butterfly_LRBI_x4.png'),
  inputName: name,
  outputPath: path.join(folder, name),
  model: FAST_MODEL as UpscaleFileJob['model'],
  scale: 4,
  format: 'png',
  compression: 0,
});

describe('a batch through the core', () => {
  it('infers image 2 while image 1 is still encoding: image 2 is written while image 1 is held before its encode', async () => {
    const gate = await createTestGate({ inProcess: true });
    const core = createCore({ executionProvider: 'cpu', models: { modelDirs: [ONNX_DIR] } });
    try {
      const job = (name: string) => batchJob(tmp, name);
      await gate.hold(encodePoint('first.png'));
      const first = core.upscaleFile(job('first.png'));
      await gate.reached(encodePoint('first.png'));
      // One worker, image 1 past its inference: image 2 runs through the whole pipeline meanwhile.
      const second = await core.upscaleFile(job('second.png'));
      expect(second).toMatchObject({ width: 256, height: 256 });
      expect(existsSync(path.join(tmp, 'second.png'))).toBe(true);
      expect(existsSync(path.join(tmp, 'first.png'))).toBe(false);
      await gate.release(encodePoint('first.png'));
      await first;
      const a = await sharp(path.join(tmp, 'first.png')).raw().toBuffer();
      const b = await sharp(path.join(tmp, 'second.png')).raw().toBuffer();
      expect(a.equals(b)).toBe(true);
    } finally {
      await core.close();
      await gate.close();
    }
  });

  it('Stop of an image that is encoding while the next one infers leaves no file of it, half-written or whole', async () => {
    const gate = await createTestGate({ inProcess: true });
    const core = createCore({ executionProvider: 'cpu', models: { modelDirs: [ONNX_DIR] } });
    const out = path.join(tmp, 'stop');
    try {
      const job = (name: string) => batchJob(out, name);
      await gate.hold(encodePoint('stopped.png'));
      const stop = new AbortController();
      const stopped = core.upscaleFile(job('stopped.png'), { signal: stop.signal });
      await gate.reached(encodePoint('stopped.png'));
      const next = core.upscaleFile(job('next.png'));
      stop.abort(new Error('Stopped by the user'));
      await expect(stopped).rejects.toThrow('Stopped by the user');
      await next;
      await gate.release(encodePoint('stopped.png'));
      // Only the other image's file: nothing of the stopped one, not even a temp file beside it.
      expect(await readdir(out)).toEqual(['next.png']);
    } finally {
      await core.close();
      await gate.close();
    }
  });
});
