/**
 * Exact output geometry in the engine (issue 41 item 1): the size a request gives an image, the model pass
 * chosen to reach it (native when it does: one resample only), the limits checked on the final size and on
 * the stitched raster, and the streamed (disk raster) path giving the same pixels as the in-memory one for a
 * resized output. The model is a tiny deterministic ×4 function, as in pipeline-streaming.test.ts.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  modelScaleFor,
  scaleToReach,
  sizeRequestOf,
  sizeRequestProblem,
  targetSize,
  type SaveImageAs,
  type SizeRequest,
} from '../../engine/contract/index.js';
import type { Inference, ModelSession, TensorResult } from '../../engine/core/inference/index.js';
import { resolveModel, type ResolvedModel } from '../../engine/core/models/catalog.js';
import { planOutput, upscaleImage, type UpscaleJob } from '../../engine/core/pipeline/index.js';
import { FAST_MODEL } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

const BABOON = path.join(IMAGES_DIR, 'set14', 'baboon.png');
const model = resolveModel(FAST_MODEL, [MODELS_DIR]);

describe('the size a request gives a w×h image', () => {
  it.each<[string, number, number, SizeRequest, [number, number]]>([
    ['width: W × round(h·W/w)', 150, 110, { width: 1000 }, [1000, 733]],
    ['height', 150, 110, { height: 1000 }, [1364, 1000]],
    ['a box limited by its width', 150, 110, { width: 300, height: 300 }, [300, 220]],
    ['a box limited by its height', 150, 110, { width: 900, height: 300 }, [409, 300]],
    ['long side of a wide image', 150, 110, { longSide: 600 }, [600, 440]],
    ['long side of a tall image', 110, 150, { longSide: 600 }, [440, 600]],
    ['never below one pixel', 4000, 3, { width: 10 }, [10, 1]],
  ])('%s', (_name, w, h, req, expected) => {
    expect(targetSize(w, h, req)).toEqual({ width: expected[0], height: expected[1] });
    expect(sizeRequestProblem(req)).toBeUndefined();
  });

  it('runs the model at its native scale when that reaches the size, else the smallest that does', () => {
    expect(scaleToReach(150, 110, { width: 1000, height: 733 })).toBe(7);
    expect(modelScaleFor(150, 110, { width: 500, height: 367 }, 4)).toBe(4);
    expect(modelScaleFor(150, 110, { width: 100, height: 73 }, 4)).toBe(4);
    expect(modelScaleFor(150, 110, { width: 900, height: 660 }, 4)).toBe(6);
    expect(modelScaleFor(150, 110, { width: 500, height: 367 }, 2)).toBe(4);
  });

  it('refuses a request no image can meet, in a sentence', () => {
    expect(sizeRequestProblem({ width: 0 })).toBe('--width must be a whole number of pixels, 1 or more, not 0.');
    expect(sizeRequestProblem({ height: 2.5 })).toMatch(/--height must be a whole number/);
    expect(sizeRequestProblem({ longSide: 10, width: 5 })).toMatch(/--long-side sets both sides already/);
    expect(sizeRequestOf({ width: null, height: null, longSide: null })).toBeUndefined();
    expect(sizeRequestOf({ width: 10, height: null, longSide: null })).toEqual({ width: 10 });
  });

  it('checks the final size and the stitched raster against the limits, naming them', () => {
    expect(planOutput(150, 110, 4, 'png', { size: { width: 500 }, nativeScale: 4 })).toEqual({
      scale: 4,
      stitched: { width: 600, height: 440 },
      final: { width: 500, height: 367 },
    });
    expect(() => planOutput(150, 110, 4, 'webp', { size: { width: 17000 }, nativeScale: 4 })).toThrow(
      /WEBP holds at most 16383 pixels a side/,
    );
    expect(() => planOutput(30000, 30000, 4, 'png', { size: { width: 40000 }, nativeScale: 4 })).toThrow(
      /would be 40000×40000 pixels, more than the 1074 megapixel output limit/,
    );
    expect(() => planOutput(100, 100, 4, 'png', { size: { width: 1000 }, nativeScale: 4 })).toThrow(
      /would take ×10, more than the ×8 Crisp upscales in one pass/,
    );
    // 12000×9000 at width 20000: the model's ×4 (1.7 GP) is over the limit, ×2 reaches the size and fits.
    expect(planOutput(12000, 9000, 4, 'png', { size: { width: 20000 }, nativeScale: 4 }).scale).toBe(2);
    // 17000×9000 at width 20000 (212 MP): even the ×2 it needs is 612 MP, over a 500 MP limit.
    expect(() =>
      planOutput(17000, 9000, 4, 'png', { size: { width: 20000 }, nativeScale: 4, maxOutputPixels: 500e6 }),
    ).toThrow(/is made from the model's ×2 result, 34000×18000 pixels, more than the 500 megapixel output limit/);
  });
});

/** A ×4 "network": output = 0.6·pixel + 0.1·(its four neighbours), clamped at the tile edge. */
function fakeInference(): Inference {
  const session: ModelSession = {
    model: model as ResolvedModel,
    provider: 'cpu',
    scale: 4,
    async run(input: Float32Array, _n: number, h: number, w: number): Promise<TensorResult> {
      const oh = h * 4;
      const ow = w * 4;
      const out = new Float32Array(3 * oh * ow);
      for (let c = 0; c < 3; c++) {
        const src = input.subarray(c * h * w, (c + 1) * h * w);
        const at = (yy: number, xx: number) =>
          src[Math.min(h - 1, Math.max(0, yy)) * w + Math.min(w - 1, Math.max(0, xx))]!;
        for (let y = 0; y < oh; y++) {
          const iy = y >> 2;
          for (let x = 0; x < ow; x++) {
            const ix = x >> 2;
            out[c * oh * ow + y * ow + x] =
              0.6 * at(iy, ix) + 0.1 * (at(iy, ix - 1) + at(iy, ix + 1) + at(iy - 1, ix) + at(iy + 1, ix));
          }
        }
      }
      return { data: out, dims: [1, 3, oh, ow] };
    },
  };
  return { requested: 'cpu', session: async () => session, release: async () => undefined } as unknown as Inference;
}

describe('a resized output streams to the same pixels as in memory (multi-tile: 40-px tiles)', () => {
  let tmp: string;
  let photo: Buffer;
  let alpha: Buffer;
  let sixteen: Buffer;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'crisp-size-'));
    const crop = sharp(BABOON).extract({ left: 100, top: 80, width: 150, height: 110 });
    photo = await crop.clone().png().toBuffer();
    const rgb = await crop.clone().raw().toBuffer();
    const rgba = Buffer.alloc(150 * 110 * 4);
    for (let i = 0; i < 150 * 110; i++) {
      rgb.copy(rgba, i * 4, i * 3, i * 3 + 3);
      rgba[i * 4 + 3] = (i % 150) + 40;
    }
    alpha = await sharp(rgba, { raw: { width: 150, height: 110, channels: 4 } })
      .png()
      .toBuffer();
    sixteen = await crop.clone().toColourspace('rgb16').png().toBuffer();
  });
  afterAll(async () => rm(tmp, { recursive: true, force: true }));

  async function runBoth(input: Buffer, format: SaveImageAs, size: SizeRequest) {
    const dir = await mkdtemp(path.join(tmp, 'case-'));
    const job = (mode: 'memory' | 'disk'): UpscaleJob => ({
      input: { data: input },
      inputName: 'case.png',
      model,
      scale: 4,
      size,
      format,
      compression: 0,
      tileSize: 40,
      outputPath: path.join(dir, `${mode}.${format}`),
      outputMode: mode,
    });
    const inference = fakeInference();
    const memResult = await upscaleImage(job('memory'), inference);
    const diskResult = await upscaleImage(job('disk'), inference);
    expect([memResult.budget.streamed, diskResult.budget.streamed]).toEqual([false, true]);
    const decode = async (p: string) => {
      const meta = await sharp(p).metadata();
      return sharp(p)
        .raw({ depth: meta.depth === 'ushort' ? 'ushort' : 'uchar' })
        .toBuffer({ resolveWithObject: true });
    };
    const mem = await decode(path.join(dir, `memory.${format}`));
    const disk = await decode(path.join(dir, `disk.${format}`));
    expect(await readdir(dir)).toHaveLength(2); // no temp raster left
    return { mem, disk, memResult, diskResult };
  }

  it.each<[string, () => Buffer, SaveImageAs, SizeRequest, [number, number]]>([
    ['png, width 500 (native ×4, then one resample)', () => photo, 'png', { width: 500 }, [500, 367]],
    ['jpg, long side 333', () => photo, 'jpg', { longSide: 333 }, [333, 244]],
    ['webp, a 400×400 box', () => photo, 'webp', { width: 400, height: 400 }, [400, 293]],
    ['png with alpha, height 700 (tiles at ×7, then one resample)', () => alpha, 'png', { height: 700 }, [955, 700]],
    ['16-bit png, width 321', () => sixteen, 'png', { width: 321 }, [321, 235]],
  ])('%s', async (_name, input, format, size, expected) => {
    const r = await runBoth(input(), format, size);
    expect([r.disk.info.width, r.disk.info.height]).toEqual(expected);
    expect([r.memResult.width, r.memResult.height]).toEqual(expected);
    expect([r.diskResult.width, r.diskResult.height]).toEqual(expected);
    expect(r.disk.info).toEqual(r.mem.info);
    expect(r.disk.data.equals(r.mem.data)).toBe(true);
  });
});
