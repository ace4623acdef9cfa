/**
 * Double upscale in the engine (the in-process `passes: 2` extension), with the real model: the result
 * goes through the model again, each pass under the huge-image rules; refused up front past the limits;
 * a cancel in either pass leaves neither an output nor an intermediate behind.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import type { Engine } from '../../engine/service/engine.js';
import { contractRefusal, FAST_MODEL, makeEngine, removeDir, tempDir, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { createTestGate } from '../helpers/testGate.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');
const BIRD_HR = path.join(IMAGES_DIR, 'set5-x4/hr/bird_HR_x4.png');
const LENNA = path.join(IMAGES_DIR, 'set14/lenna.png');
const fields = { model: FAST_MODEL, scale: 2, saveImageAs: 'png', enhanceFace: false };
const file = (p: string) => [{ originalFileName: path.basename(p), data: { path: p } }];

async function rgb(p: string) {
  const { data, info } = await sharp(p).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function psnr(a: Buffer, b: Buffer): number {
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i]! - b[i]!) ** 2;
  return 10 * Math.log10((255 * 255) / (se / a.length));
}

const mean = (d: Buffer) => d.reduce((s, v) => s + v, 0) / d.length;

describe('double upscale (two passes)', () => {
  let engine: Engine;
  let streamed: Engine;
  let out: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    out = await tempDir();
    dirs.push(out);
    engine = await makeEngine();
    // Every output above 100 kB streams to disk: the second pass's 288×288 output does, the first's 144×144 does not.
    streamed = await makeEngine({ limits: { streamAboveBytes: 100_000 } });
  });
  afterAll(async () => {
    await engine.close();
    await streamed.close();
    for (const d of dirs) await removeDir(d);
  });

  it('×2 twice is ×4: the right size, close to the ground truth, the same pixels in memory and streamed, progress monotonic', async () => {
    // A folder of its own: the folder is listed at the end, whichever tests ran before.
    const out = await tempDir();
    dirs.push(out);
    const target = path.join(out, 'memory.png');
    const { taskId } = await engine.startTask(LOCAL_CALLER, {
      fields,
      file: file(BIRD),
      outputPath: target,
      passes: 2,
    });
    const percents: number[] = [];
    const s = await waitForTask(
      engine,
      taskId,
      LOCAL_CALLER,
      (x) => percents.push(Number.parseInt(x.progress, 10)),
      120_000,
    );
    expect(s.status).toBe('PROCESSED');
    expect(s.files[0]!.dimensions).toEqual({ width: 288, height: 288 });
    for (let i = 1; i < percents.length; i++) expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1]!);

    const got = await rgb(target);
    const hr = await rgb(BIRD_HR);
    expect([got.width, got.height]).toEqual([hr.width, hr.height]);
    // The bird's 72×72 input was made from this 288×288 original: two ×2 passes must land near it, near
    // one ×4 pass of the same model, and keep the overall brightness.
    const onceX4Path = path.join(out, 'once-x4.png');
    const x4 = await engine.startTask(LOCAL_CALLER, {
      fields: { ...fields, scale: 4 },
      file: file(BIRD),
      outputPath: onceX4Path,
    });
    expect((await waitForTask(engine, x4.taskId)).status).toBe('PROCESSED');
    const onceX4 = await rgb(onceX4Path);
    // Measured: 22.0 dB against the original, 26.7 dB against one ×4 pass of the same model (which is
    // 25.3 dB from the original), and each pass brightens by about 2 levels. A wrong channel order, a
    // misplaced tile or a pass run on the wrong image falls far below these.
    expect(psnr(got.data, hr.data)).toBeGreaterThan(20);
    expect(psnr(got.data, onceX4.data)).toBeGreaterThan(24);
    expect(Math.abs(mean(got.data) - mean(hr.data))).toBeLessThan(6);

    const streamedTarget = path.join(out, 'streamed.png');
    const again = await streamed.startTask(LOCAL_CALLER, {
      fields,
      file: file(BIRD),
      outputPath: streamedTarget,
      passes: 2,
    });
    expect((await waitForTask(streamed, again.taskId, LOCAL_CALLER, undefined, 120_000)).status).toBe('PROCESSED');
    expect((await rgb(streamedTarget)).data.equals(got.data)).toBe(true);
    // Only the two outputs: no intermediate, no temp raster.
    expect((await readdir(out)).sort()).toEqual(['memory.png', 'once-x4.png', 'streamed.png']);
  });

  it('one pass of the same settings is half the size (the option really adds a pass)', async () => {
    const target = path.join(out, 'once.png');
    const { taskId } = await engine.startTask(LOCAL_CALLER, { fields, file: file(BIRD), outputPath: target });
    expect((await waitForTask(engine, taskId)).files[0]!.dimensions).toEqual({ width: 144, height: 144 });
  });

  it('names a task output by the total scale', async () => {
    const { taskId } = await engine.startTask(LOCAL_CALLER, { fields, file: file(BIRD), passes: 2 });
    const s = await waitForTask(engine, taskId, LOCAL_CALLER, undefined, 120_000);
    expect(s.files[0]!.fileName).toBe(`bird_LRBI_x4_${FAST_MODEL}_x4.png`);
  });

  it('refuses before any work when the final image would exceed the output limit, though one pass fits', async () => {
    const dir = await tempDir();
    dirs.push(dir);
    const small = await makeEngine({ limits: { maxOutputPixels: 50_000 } });
    try {
      // One pass (144×144 = 20 736 pixels) fits; two (288×288 = 82 944) do not.
      const once = await small.startTask(LOCAL_CALLER, {
        fields,
        file: file(BIRD),
        outputPath: path.join(dir, 'once.png'),
      });
      expect((await waitForTask(small, once.taskId)).status).toBe('PROCESSED');
      const e = await contractRefusal(
        small.startTask(LOCAL_CALLER, { fields, file: file(BIRD), outputPath: path.join(dir, 'twice.png'), passes: 2 }),
      );
      expect(e.status).toBe(400);
      expect(e.message).toMatch(
        /"bird_LRBI_x4\.png" upscaled twice at ×2 \(×4 in all\) would be 288×288 pixels, more than the 0 megapixel output limit\. Choose one pass or a smaller scale\./,
      );
      expect(await readdir(dir)).toEqual(['once.png']);
    } finally {
      await small.close();
    }
  });

  it('refuses when the first pass’s result would be too large to upscale again', async () => {
    const small = await makeEngine({ limits: { maxInputPixels: 10_000 } });
    try {
      const e = await contractRefusal(small.startTask(LOCAL_CALLER, { fields, file: file(BIRD), passes: 2 }));
      expect(e.message).toMatch(
        /the first pass's 144×144 result is more than the 0 megapixel an image may have to be upscaled/,
      );
    } finally {
      await small.close();
    }
  });

  it.each([
    ['the first pass', ['tile-0']],
    ['the second pass', ['pass-2', 'tile-1']],
  ])('a cancel in %s leaves no output and no intermediate', async (label, points) => {
    const dir = await tempDir();
    dirs.push(dir);
    const target = path.join(dir, 'lenna-x4.png');
    // The test gate holds the work at a tile of the pass named (the points in order: the second pass's
    // tile 1 is held only once the second pass has begun), whatever the machine's speed.
    const gate = await createTestGate({ inProcess: true });
    try {
      await gate.hold(points[0]!);
      const { taskId } = await engine.startTask(LOCAL_CALLER, {
        fields,
        file: file(LENNA),
        outputPath: target,
        passes: 2,
      });
      for (let k = 0; k < points.length; k++) {
        await gate.reached(points[k]!);
        if (k + 1 < points.length) {
          await gate.hold(points[k + 1]!);
          await gate.release(points[k]!);
        }
      }
      const at = Number.parseInt((await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId } })).progress, 10);
      const cancelled = engine.cancelTask(LOCAL_CALLER, taskId);
      await gate.release(points.at(-1)!);
      await cancelled;
      const s = await waitForTask(engine, taskId, LOCAL_CALLER);
      expect(s.status).toBe('PROCESSING_FAILED');
      // The weight of the first pass is 1/(1+2²) = 20 %: the cancel landed in the pass named.
      if (label === 'the second pass') expect(at).toBeGreaterThanOrEqual(20);
      else expect(at).toBeLessThan(20);
    } finally {
      await gate.close();
    }
    expect(await readdir(dir)).toEqual([]);
  });
});
