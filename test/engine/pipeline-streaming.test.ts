/**
 * Streamed output (tiles → disk raster → encoder reading strips) against the in-memory path: the same
 * pixels in every format, with alpha, 16-bit, EXIF and the per-tile resize; temp files gone however a job
 * ends; a job that cannot fit the free disk refused before inference with nothing written.
 *
 * The model here is a tiny deterministic function in JavaScript (×4, each output pixel a blend of its input
 * pixel and that pixel's neighbours), so tiling and overlap matter as with a real network while each run
 * costs microseconds; one case runs the real digital-art-4x to show nothing depends on the fake.
 */
import { readdirSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import { limitsFromEnv, resolveLimits } from '../../engine/service/limits.js';
import type { SaveImageAs, Scale } from '../../engine/contract/index.js';
import {
  createInference,
  type Inference,
  type ModelSession,
  type TensorResult,
} from '../../engine/core/inference/index.js';
import { resolveModel, type ResolvedModel } from '../../engine/core/models/catalog.js';
import {
  checkOutputFits,
  DiskRaster,
  estimateJob,
  ImageInputError,
  JobProgress,
  upscaleImage,
  type OutputRaster,
  type UpscaleJob,
} from '../../engine/core/pipeline/index.js';
import { contractRefusal, FAST_MODEL, makeEngine, removeDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

const BABOON = path.join(IMAGES_DIR, 'set14', 'baboon.png'); // 500×480
const model = resolveModel(FAST_MODEL, [MODELS_DIR]);

/** A ×4 "network": output = 0.6·pixel + 0.1·(left + right + up + down) of the input, clamped at the tile edge. */
function fakeSession(opts: { failAtRun?: number; runs?: { n: number } } = {}): ModelSession {
  let count = 0;
  return {
    model: model as ResolvedModel,
    provider: 'cpu',
    scale: 4,
    async run(input: Float32Array, _n: number, h: number, w: number): Promise<TensorResult> {
      count++;
      if (opts.runs) opts.runs.n++;
      if (opts.failAtRun !== undefined && count === opts.failAtRun)
        throw new Error('injected failure in the middle of the job');
      const oh = h * 4;
      const ow = w * 4;
      const out = new Float32Array(3 * oh * ow);
      for (let c = 0; c < 3; c++) {
        const src = input.subarray(c * h * w, (c + 1) * h * w);
        for (let y = 0; y < oh; y++) {
          const iy = y >> 2;
          for (let x = 0; x < ow; x++) {
            const ix = x >> 2;
            const at = (yy: number, xx: number) =>
              src[Math.min(h - 1, Math.max(0, yy)) * w + Math.min(w - 1, Math.max(0, xx))]!;
            out[c * oh * ow + y * ow + x] =
              0.6 * at(iy, ix) +
              0.1 * (at(iy, ix - 1) + at(iy, ix + 1) + at(iy - 1, ix) + at(iy + 1, ix)) +
              (x & 3) * 0.002;
          }
        }
      }
      return { data: out, dims: [1, 3, oh, ow] };
    },
  };
}

function fakeInference(session: ModelSession): Inference {
  return { requested: 'cpu', session: async () => session, release: async () => undefined } as unknown as Inference;
}

let tmp: string;
let inputs: { photo: Buffer; alpha: Buffer; sixteen: Buffer; rotated: Buffer };

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'crisp-stream-'));
  const crop = sharp(BABOON).extract({ left: 100, top: 80, width: 150, height: 110 });
  const photo = await crop.clone().png().toBuffer();
  // A translucent horizontal gradient (alpha 40…189), so alpha goes through the model too.
  const rgb = await crop.clone().raw().toBuffer();
  const rgba = Buffer.alloc(150 * 110 * 4);
  for (let i = 0; i < 150 * 110; i++) {
    rgb.copy(rgba, i * 4, i * 3, i * 3 + 3);
    rgba[i * 4 + 3] = (i % 150) + 40;
  }
  const alpha = await sharp(rgba, { raw: { width: 150, height: 110, channels: 4 } })
    .png()
    .toBuffer();
  const sixteen = await crop.clone().toColourspace('rgb16').png().toBuffer();
  // EXIF orientation 6 (rotate 90° clockwise to display) with camera fields to carry over.
  const rotated = await crop
    .clone()
    .jpeg({ quality: 92 })
    .withMetadata({ orientation: 6 })
    .withExifMerge({ IFD0: { Make: 'Crisp test camera' } })
    .toBuffer();
  inputs = { photo, alpha, sixteen, rotated };
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let n = 0;
async function runBoth(
  input: Buffer,
  opts: Partial<UpscaleJob> & { format: SaveImageAs },
  inference = fakeInference(fakeSession()),
) {
  const dir = await mkdtemp(path.join(tmp, 'case-'));
  const job = (mode: 'memory' | 'disk'): UpscaleJob => ({
    input: { data: input },
    inputName: 'case.png',
    model,
    scale: 4,
    compression: 0,
    tileSize: 40,
    outputPath: path.join(dir, `${mode}-${n++}.${opts.format}`),
    outputMode: mode,
    ...opts,
  });
  const mem = job('memory');
  const disk = job('disk');
  const memResult = await upscaleImage(mem, inference);
  const diskResult = await upscaleImage(disk, inference);
  expect(memResult.budget.streamed).toBe(false);
  expect(diskResult.budget.streamed).toBe(true);
  const decode = async (p: string) => {
    const img = sharp(p);
    const meta = await img.metadata();
    const { data, info } = await img
      .raw({ depth: meta.depth === 'ushort' ? 'ushort' : 'uchar' })
      .toBuffer({ resolveWithObject: true });
    return { data, info, meta };
  };
  return { dir, mem: await decode(mem.outputPath), disk: await decode(disk.outputPath), memResult, diskResult };
}

describe('streamed output equals the in-memory path, pixel for pixel (multi-tile: 40-px tiles)', () => {
  for (const format of ['png', 'jpg', 'webp'] as const) {
    it(`${format}: an RGB photo crop at ×4`, async () => {
      const r = await runBoth(inputs.photo, { format });
      expect([r.disk.info.width, r.disk.info.height]).toEqual([600, 440]);
      expect(r.disk.info).toEqual(r.mem.info);
      expect(r.disk.data.equals(r.mem.data)).toBe(true);
      expect(await readdir(r.dir)).toHaveLength(2); // the two outputs, no temp file
    });
  }

  it('png with alpha at ×3 (model ×4, each tile resized before it is written)', async () => {
    const r = await runBoth(inputs.alpha, { format: 'png', scale: 3 as Scale });
    expect([r.disk.info.width, r.disk.info.height, r.disk.info.channels]).toEqual([450, 330, 4]);
    expect(r.disk.data.equals(r.mem.data)).toBe(true);
    // The alpha really is translucent and varies, so it was carried through.
    let lo = 255;
    let hi = 0;
    for (let i = 3; i < r.disk.data.length; i += 4) {
      lo = Math.min(lo, r.disk.data[i]!);
      hi = Math.max(hi, r.disk.data[i]!);
    }
    expect(lo).toBeLessThan(60);
    expect(hi).toBeGreaterThan(180);
  });

  it('jpg from a translucent input is flattened the same way', async () => {
    const r = await runBoth(inputs.alpha, { format: 'jpg' });
    expect(r.disk.info.channels).toBe(3);
    expect(r.disk.data.equals(r.mem.data)).toBe(true);
    expect(r.diskResult.warnings).toEqual(r.memResult.warnings);
  });

  it('16-bit png stays 16-bit and is tagged sRGB', async () => {
    const r = await runBoth(inputs.sixteen, { format: 'png' });
    expect(r.disk.meta.depth).toBe('ushort');
    expect(r.disk.meta.icc).toBeDefined();
    expect(r.disk.data.equals(r.mem.data)).toBe(true);
  });

  it('EXIF: upright pixels, orientation reset, camera fields kept (jpg and png)', async () => {
    for (const format of ['jpg', 'png'] as const) {
      const r = await runBoth(inputs.rotated, { format });
      expect([r.disk.info.width, r.disk.info.height]).toEqual([440, 600]); // rotated upright
      expect(r.disk.data.equals(r.mem.data)).toBe(true);
      expect(r.disk.meta.orientation ?? 1).toBe(1);
      expect(r.disk.meta.exif?.toString('latin1')).toContain('Crisp test camera');
    }
  });

  it('the real digital-art-4x network gives the same pixels both ways', async () => {
    const inference = createInference({ executionProvider: 'cpu' });
    try {
      const small = await sharp(inputs.photo).extract({ left: 0, top: 0, width: 96, height: 72 }).png().toBuffer();
      const r = await runBoth(small, { format: 'png', tileSize: 48 }, inference);
      expect(r.disk.data.equals(r.mem.data)).toBe(true);
    } finally {
      await inference.release();
    }
  });

  it('the afterStitch hook reads and writes rectangles of the output before it is encoded (face-paste point)', async () => {
    const paint = async (out: OutputRaster) => {
      const rect = out.readRect(100, 50, 30, 20);
      for (let i = 0; i < rect.data.length; i += rect.channels) rect.data[i] = 255 - (rect.data[i] ?? 0);
      out.writeRect(100, 50, rect);
    };
    const plain = await runBoth(inputs.photo, { format: 'png' });
    const painted = await runBoth(inputs.photo, { format: 'png', afterStitch: paint });
    expect(painted.disk.data.equals(painted.mem.data)).toBe(true);
    const at = (b: Buffer, x: number, y: number) => b[(y * 600 + x) * 3]!;
    expect(at(painted.disk.data, 110, 60)).toBe(255 - at(plain.disk.data, 110, 60));
    expect(at(painted.disk.data, 99, 60)).toBe(at(plain.disk.data, 99, 60));
  });
});

describe('temporary files', () => {
  async function streamed(dir: string, session: ModelSession, extra: Partial<UpscaleJob> = {}) {
    return upscaleImage(
      {
        input: { data: inputs.photo },
        inputName: 'photo.png',
        model,
        scale: 4,
        format: 'png',
        compression: 0,
        tileSize: 40,
        outputMode: 'disk',
        outputPath: path.join(dir, 'out.png'),
        ...extra,
      },
      fakeInference(session),
    );
  }

  it('are gone after success; only the output remains', async () => {
    const dir = await mkdtemp(path.join(tmp, 'ok-'));
    const seen: string[][] = [];
    // A synchronous listing: what was there at that moment of the run, not whenever a thread got to it.
    await streamed(dir, fakeSession(), { onProgress: () => void seen.push(readdirSync(dir)) });
    expect(await readdir(dir)).toEqual(['out.png']);
    // While it ran, the decoded input (.v) and the output raster (.tif) were there, beside the output.
    expect(seen.flat().some((f) => /^\.crisp-raster-\d+-[0-9a-f]+\.tif$/.test(f))).toBe(true);
  });

  it('are gone after a failure injected mid-run, and no output is written', async () => {
    const dir = await mkdtemp(path.join(tmp, 'fail-'));
    await expect(streamed(dir, fakeSession({ failAtRun: 5 }))).rejects.toThrow(
      'injected failure in the middle of the job',
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it('are gone after cancel, and no output is written', async () => {
    const dir = await mkdtemp(path.join(tmp, 'cancel-'));
    const ac = new AbortController();
    let ticks = 0;
    const run = streamed(dir, fakeSession(), {
      signal: ac.signal,
      onProgress: () => (++ticks === 4 ? ac.abort(new Error('cancelled by the test')) : undefined),
    });
    await expect(run).rejects.toThrow('cancelled by the test');
    expect(ticks).toBeGreaterThanOrEqual(4);
    expect(await readdir(dir)).toEqual([]);
  });

  it('left by a process that died are swept by the next streamed job in that folder', async () => {
    const dir = await mkdtemp(path.join(tmp, 'stale-'));
    // pid 2^22 + 1 is above Linux's pid_max: certainly not a running process.
    const stale = `.crisp-raster-${2 ** 22 + 1}-0123456789ab.tif`;
    const mine = `.crisp-raster-${process.pid}-0123456789ab.tif`; // a live process's file is left alone
    await writeFile(path.join(dir, stale), 'x');
    await writeFile(path.join(dir, mine), 'x');
    await streamed(dir, fakeSession());
    expect((await readdir(dir)).sort()).toEqual([mine, 'out.png'].sort());
  });
});

describe('budgets', () => {
  it('a job that cannot fit the free disk is refused before inference, with nothing written', async () => {
    const dir = await mkdtemp(path.join(tmp, 'full-'));
    const runs = { n: 0 };
    const asked: string[] = [];
    const err = await upscaleImage(
      {
        input: { data: inputs.photo },
        inputName: 'photo.png',
        model,
        scale: 8,
        format: 'png',
        compression: 0,
        outputPath: path.join(dir, 'out.png'),
        outputMode: 'disk',
        limits: { diskReserveBytes: 0 },
        // 1.5 MB free: the 1200×880 RGB raster alone is 3.2 MB.
        freeDisk: async (d) => {
          asked.push(d);
          return 1_500_000;
        },
      },
      fakeInference(fakeSession({ runs })),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageInputError);
    expect((err as Error).message).toBe(
      `Not enough free disk space to upscale "photo.png": its temporary raster and output need about 6 MB in ${dir}, but only 2 MB is free. ` +
        'Free some space, choose a smaller scale or JPEG, or write the output to another disk.',
    );
    expect(asked).toEqual([dir]);
    expect(runs.n).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });

  it('the engine refuses such a task at start-task with 400, before anything is queued', async () => {
    const dataDir = await mkdtemp(path.join(tmp, 'engine-'));
    // A reserve larger than any disk: no job fits, whatever this machine has free.
    const engine = await makeEngine({ dataDir, limits: { diskReserveBytes: 2 ** 60 } });
    try {
      const src = path.join(tmp, 'photo.png');
      await writeFile(src, inputs.photo);
      const ce = await contractRefusal(
        engine.startTask(LOCAL_CALLER, {
          fields: { model: FAST_MODEL, scale: 4, saveImageAs: 'png', enhanceFace: false },
          file: [{ originalFileName: 'photo.png', data: { path: src } }],
        }),
      );
      expect(ce.status).toBe(400);
      expect(ce.message).toMatch(
        /^Bad Request: Not enough free disk space to upscale "photo\.png": its output needs about 1 MB in .*inputs, but only .* is free \(1152921504\.6 GB is kept in reserve\)\. Free some space/,
      );
      expect(await readdir(path.join(dataDir, 'tasks')).catch(() => [])).toEqual([]);
    } finally {
      await engine.close();
      await removeDir(dataDir);
    }
  });

  it('estimates: a 12 MP photo ×4 streams with RAM independent of its size; temp disk = output raster + decoded input', () => {
    const shape = (w: number, h: number) => ({
      inWidth: w,
      inHeight: h,
      hasAlpha: false,
      outDepth: 8 as const,
      outWidth: 4 * w,
      outHeight: 4 * h,
      format: 'png' as const,
      tileSize: 512,
    });
    const big = estimateJob(shape(4000, 3000), 'auto', 64 * 2 ** 20);
    const mid = estimateJob(shape(2000, 1500), 'auto', 64 * 2 ** 20);
    const small = estimateJob(shape(768, 768), 'auto', 64 * 2 ** 20);
    expect([big.streamed, mid.streamed, small.streamed]).toEqual([true, true, false]);
    expect(big.tempDiskBytes).toBe(16000 * 12000 * 3 + 4000 * 3000 * 3);
    expect(big.memoryBytes).toBeLessThan(1e9);
    expect(big.memoryBytes / mid.memoryBytes).toBeLessThan(1.25);
  });
});

describe('limits', () => {
  it('≥ 1 gigapixel PNG and JPEG outputs are accepted; JPEG and WebP side limits are refused naming the limit and suggesting PNG', () => {
    expect(checkOutputFits(8192, 8192, 4, 'png')).toEqual({ width: 32768, height: 32768 });
    expect(checkOutputFits(8000, 8000, 4, 'jpg')).toEqual({ width: 32000, height: 32000 });
    expect(() => checkOutputFits(17000, 100, 4, 'jpg', { name: 'pano.jpg' })).toThrow(
      '"pano.jpg" at ×4 would be 68000×400 pixels, but JPG holds at most 65535 pixels a side. Choose PNG, or a smaller scale.',
    );
    expect(() => checkOutputFits(4200, 100, 4, 'webp', { name: 'pano.jpg' })).toThrow(
      /WEBP holds at most 16383 pixels a side\. Choose PNG or JPG/,
    );
    expect(() => checkOutputFits(8193, 8192, 4, 'png', { name: 'big.png' })).toThrow(
      /more than the 1074 megapixel output limit/,
    );
  });

  it('a disk raster reads back what was written, anywhere in it', () => {
    return (async () => {
      const file = path.join(await mkdtemp(path.join(tmp, 'raster-')), 'r.tif');
      const r = DiskRaster.create(file, 70, 50, 4, 16);
      const rect = {
        width: 9,
        height: 7,
        channels: 4,
        depth: 16 as const,
        data: Uint16Array.from({ length: 9 * 7 * 4 }, (_, i) => i * 97),
      };
      r.writeRect(61, 43, rect);
      expect([...r.readRect(61, 43, 9, 7).data]).toEqual([...rect.data]);
      expect([...r.readRect(0, 0, 2, 1).data]).toEqual(new Array(8).fill(0));
      expect(() => r.writeRect(62, 43, rect)).toThrow(/outside the 70×50 raster/);
      r.close();
      const { data, info } = await sharp(file)
        .toColourspace('rgb16')
        .raw({ depth: 'ushort' })
        .toBuffer({ resolveWithObject: true });
      expect([info.width, info.height, info.channels]).toEqual([70, 50, 4]);
      const px = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
      expect(px[(43 * 70 + 61) * 4 + 1]).toBe(97);
    })();
  });
});

describe('progress and ETA', () => {
  it('is time-weighted across tiles and the encode, with an ETA from the measured tile rate', () => {
    let t = 100;
    const seen: Array<[number, number | undefined]> = [];
    // 4 equal tiles of 1 MP input; 64 MP of PNG output ≈ 2.56 s of encode at 25 MP/s.
    const p = new JobProgress(
      (f, eta) => seen.push([f, eta]),
      4e6,
      64e6,
      'png',
      () => t,
    );
    p.start();
    p.beginTiles();
    for (let i = 0; i < 4; i++) {
      t += 10; // 10 s a tile
      p.tileDone(1e6);
    }
    // After tile 1: 10 s done of 40 s inference + 2.56 s encode; ETA 32.56 → 33.
    expect(seen[1]![0]).toBeCloseTo(10 / 42.56, 6);
    expect(seen[1]![1]).toBe(33);
    expect(seen[4]![0]).toBeCloseTo(40 / 42.56, 6);
    expect(seen[4]![1]).toBe(3);
    const stop = p.beginEncode();
    stop();
    p.done();
    expect(seen.at(-1)).toEqual([1, 0]);
    const fractions = seen.map(([f]) => f);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
  });

  it('a streamed job reports fractions that never go back, ETAs while it runs, and 1 at the end', async () => {
    const dir = await mkdtemp(path.join(tmp, 'progress-'));
    const seen: Array<[number, number | undefined]> = [];
    await upscaleImage(
      {
        input: { data: inputs.photo },
        inputName: 'photo.png',
        model,
        scale: 4,
        format: 'png',
        compression: 0,
        tileSize: 40,
        outputMode: 'disk',
        outputPath: path.join(dir, 'out.png'),
        onProgress: (f, eta) => seen.push([f, eta]),
      },
      fakeInference(fakeSession()),
    );
    const fractions = seen.map(([f]) => f);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(fractions[0]).toBe(0);
    expect(seen.at(-1)).toEqual([1, 0]);
    // 12 tiles (4×3 at 40 px): one report each, with an ETA, before the encode's.
    expect(seen.filter(([f, eta]) => f > 0 && f < 1 && eta !== undefined).length).toBeGreaterThanOrEqual(12);
  });
});

describe('configurable limits', () => {
  it('reads CRISP_MAX_OUTPUT_PIXELS, CRISP_STREAM_ABOVE_BYTES, CRISP_DISK_RESERVE_BYTES; ignores junk; explicit overrides win', () => {
    expect(
      limitsFromEnv({
        CRISP_MAX_OUTPUT_PIXELS: '2000000000',
        CRISP_STREAM_ABOVE_BYTES: '1048576',
        CRISP_DISK_RESERVE_BYTES: 'lots',
      }),
    ).toEqual({
      maxOutputPixels: 2_000_000_000,
      streamAboveBytes: 1_048_576,
    });
    expect(resolveLimits({ maxOutputPixels: 5 }).maxOutputPixels).toBe(5);
    expect(resolveLimits().maxOutputPixels).toBe(2 ** 30);
  });
});
