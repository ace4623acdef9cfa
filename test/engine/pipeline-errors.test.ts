/**
 * Bad inputs and interrupted runs: a clear ImageInputError (or AbortError), nothing at outputPath, and no
 * temp file left beside it.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createInference, type Inference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import {
  ImageInputError,
  checkOutputFits,
  probeImage,
  upscaleImage,
  type UpscaleJob,
} from '../../engine/core/pipeline/index.js';
import { hugePng } from '../helpers/craftedImages.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

const BUTTERFLY = path.join(IMAGES_DIR, 'set5-x4', 'lr', 'butterfly_LRBI_x4.png');
const model = resolveModel('digital-art-4x', [MODELS_DIR]);

let inference: Inference;
let tmp: string;
let inDir: string;
let outDir: string;

beforeAll(() => {
  inference = createInference({ executionProvider: 'cpu' });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-errors-'));
});
beforeEach(() => {
  inDir = path.join(tmp, `in-${Math.random().toString(36).slice(2)}`);
  outDir = path.join(tmp, `out-${Math.random().toString(36).slice(2)}`);
  mkdirSync(inDir);
  mkdirSync(outDir);
});
afterAll(async () => {
  await inference.release();
  rmSync(tmp, { recursive: true, force: true });
});

async function expectRefused(
  input: UpscaleJob['input'],
  name: string,
  message: RegExp,
  opts: Partial<UpscaleJob> = {},
) {
  const outputPath = path.join(outDir, 'result.png');
  const err = await upscaleImage(
    { input, inputName: name, model, scale: 4, format: 'png', compression: 0, outputPath, ...opts },
    inference,
  ).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImageInputError);
  expect((err as Error).message).toContain(`"${name}"`);
  expect((err as Error).message).toMatch(message);
  expect(readdirSync(outDir)).toEqual([]); // no output, no temp file
}

describe('bad input', () => {
  it('refuses a truncated PNG', async () => {
    const full = readFileSync(BUTTERFLY);
    const file = path.join(inDir, 'cut.png');
    writeFileSync(file, full.subarray(0, Math.floor(full.length / 2)));
    await expectRefused({ path: file }, 'cut.png', /could not be decoded: the file is truncated/);
  });

  it('refuses a text file named .jpg, an empty file and a missing file', async () => {
    const txt = path.join(inDir, 'notes.jpg');
    writeFileSync(txt, 'this is not an image\n'.repeat(20));
    await expectRefused({ path: txt }, 'notes.jpg', /not a readable image.*JPEG, PNG or WebP/);
    const empty = path.join(inDir, 'empty.png');
    writeFileSync(empty, '');
    await expectRefused({ path: empty }, 'empty.png', /is empty/);
    await expectRefused({ data: new Uint8Array(0) }, 'upload.png', /is empty/);
    await expectRefused({ path: path.join(inDir, 'nope.png') }, 'nope.png', /could not be opened/);
  });

  it('refuses an animated WebP with a sentence instead of upscaling (and charging) its first frame', async () => {
    const frame = (background: string) =>
      sharp({ create: { width: 32, height: 24, channels: 3, background } })
        .png()
        .toBuffer();
    const anim = await sharp([await frame('#f00'), await frame('#00f'), await frame('#0f0')], {
      join: { animated: true },
    })
      .webp()
      .toBuffer();
    expect((await sharp(anim).metadata()).pages).toBe(3);
    await expectRefused({ data: anim }, 'party.webp', /is animated \(3 frames\): Crisp upscales still images/);
  });

  it('refuses from the header alone an image claiming 100000×100000 pixels', async () => {
    const file = path.join(inDir, 'huge.png');
    writeFileSync(file, hugePng(100000, 100000));
    const t0 = performance.now();
    await expect(probeImage({ path: file }, 'huge.png')).rejects.toThrow(
      /"huge.png" is too large: 100000×100000 pixels/,
    );
    await expectRefused({ path: file }, 'huge.png', /too large.*Reduce the image size/);
    // Only a bound on a hang (decoding 10 gigapixels); the header check is what the messages above show.
    expect(performance.now() - t0).toBeLessThan(30_000);
    // The same header at a size within limits is accepted by the probe.
    expect((await probeImage({ data: hugePng(300, 200) }, 'ok.png')).width).toBe(300);
  });

  it('accepts an input over 40 megapixel whenever its output fits; face enhancement keeps the 40 MP bound', async () => {
    // 8000×8000 = 64 MP: above the old fixed input limit. Inputs that large decode to disk, so only the output
    // limit (2^30 pixels) and the format's side limit decide.
    const file = path.join(inDir, 'big.png');
    writeFileSync(file, hugePng(8000, 8000));
    const info = await probeImage({ path: file }, 'big.png');
    expect([info.width, info.height]).toEqual([8000, 8000]);
    expect(checkOutputFits(8000, 8000, 1, 'png', { name: 'big.png' })).toEqual({ width: 8000, height: 8000 });
    expect(checkOutputFits(8000, 8000, 4, 'png', { name: 'big.png' })).toEqual({ width: 32000, height: 32000 });
    expect(() => checkOutputFits(8000, 8000, 8, 'png', { name: 'big.png' })).toThrow(
      /"big.png" at ×8 would be 64000×64000 pixels, more than the 1074 megapixel output limit/,
    );
    expect(() => checkOutputFits(8000, 8000, 4, 'webp', { name: 'big.png' })).toThrow(/WEBP holds at most/);
    // With faces it is refused before any work, saying what to change.
    await expectRefused(
      { path: file },
      'big.png',
      /8000×8000 pixels: face enhancement works on images up to 40 megapixel/,
      {
        scale: 1,
        faces: { detectorPath: 'unused.onnx', restorerPath: 'unused.onnx', restorerName: 'gfpgan-1.4' },
      },
    );
    // Without faces the size is not what stops it: this header-only file fails where decoding starts.
    await expectRefused({ path: file }, 'big.png', /could not be decoded/, { scale: 1 });
  });

  it('refuses outputs the format cannot hold', async () => {
    const wide = await sharp({ create: { width: 4100, height: 8, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    await expectRefused({ data: wide }, 'wide.png', /16400×32 pixels.*WEBP holds at most 16383 pixels a side/, {
      format: 'webp',
      outputPath: path.join(outDir, 'wide.webp'),
    });
    expect(() => checkOutputFits(4096, 4096, 4, 'webp', { name: 'a.png' })).toThrow(ImageInputError);
    expect(checkOutputFits(4095, 10, 4, 'webp')).toEqual({ width: 16380, height: 40 });
    expect(() => checkOutputFits(16384, 10, 4, 'jpg')).toThrow(/JPG holds at most 65535/);
    expect(() => checkOutputFits(5000, 5000, 8, 'png', { maxOutputPixels: 1e9 })).toThrow(/output limit/);
    expect(checkOutputFits(57, 86, 3, 'png')).toEqual({ width: 171, height: 258 });
  });
});

describe('interrupted runs', () => {
  it('stops between tiles on abort, leaving nothing behind', async () => {
    const ac = new AbortController();
    let ticks = 0;
    const outputPath = path.join(outDir, 'aborted.png');
    const run = upscaleImage(
      {
        input: { path: BUTTERFLY },
        inputName: 'b.png',
        model,
        scale: 4,
        format: 'png',
        compression: 0,
        outputPath,
        tileSize: 16,
        signal: ac.signal,
        onProgress: (f) => {
          if (f > 0 && ++ticks === 2) ac.abort();
        },
      },
      inference,
    );
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(ticks).toBe(2); // 16 tiles planned; it stopped right after the abort
    expect(readdirSync(outDir)).toEqual([]);
  });

  it('removes the temp file when the final rename fails', async () => {
    const blocker = path.join(outDir, 'taken.png');
    mkdirSync(path.join(blocker, 'child'), { recursive: true }); // a non-empty directory cannot be replaced
    await expect(
      upscaleImage(
        {
          input: { path: BUTTERFLY },
          inputName: 'b.png',
          model,
          scale: 1,
          format: 'png',
          compression: 0,
          outputPath: blocker,
        },
        inference,
      ),
    ).rejects.toThrow();
    expect(readdirSync(outDir)).toEqual(['taken.png']);
  });
});
