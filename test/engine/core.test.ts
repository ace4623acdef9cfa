/**
 * engine/core: one typed job, run in a worker thread. The same pixels as the pipeline run in-process,
 * progress and cancellation across the thread boundary, errors that keep their class or name, and nothing
 * left behind by a cancel. The cancel holds the job after its first tile with the test-only gate
 * (CRISP_TEST_HOLD_DIR) instead of racing the machine.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isContractError } from '../../engine/contract/index.js';
import { createCore, type Core, type UpscaleFileJob } from '../../engine/core/index.js';
import { createTestGate } from '../helpers/testGate.js';
import { createInference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { upscaleImage } from '../../engine/core/pipeline/index.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

const BUTTERFLY = path.join(IMAGES_DIR, 'set5-x4', 'lr', 'butterfly_LRBI_x4.png'); // 64×64
let tmp: string;
let core: Core;

const job = (over: Partial<UpscaleFileJob>): UpscaleFileJob => ({
  inputPath: BUTTERFLY,
  inputName: 'butterfly.png',
  outputPath: path.join(tmp, 'out.png'),
  model: 'digital-art-4x',
  scale: 4,
  format: 'png',
  compression: 0,
  tileSize: 32,
  ...over,
});

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'crisp-core-'));
  core = createCore({
    executionProvider: 'cpu',
    models: { modelDirs: [ONNX_DIR], denoiseCacheDir: path.join(tmp, 'cache') },
  });
});
afterAll(async () => {
  await core.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('core.upscaleFile', () => {
  it('writes the same pixels as the pipeline in-process, with monotonic progress ending at 1', async () => {
    const fractions: number[] = [];
    const out = path.join(tmp, 'core.png');
    const r = await core.upscaleFile(job({ outputPath: out }), { onProgress: (f) => fractions.push(f) });
    expect(r).toMatchObject({ width: 256, height: 256, provider: 'cpu', streamed: false, warnings: [] });
    expect(r.bytes).toBe((await stat(out)).size);
    expect(fractions.length).toBeGreaterThanOrEqual(4); // 2×2 tiles, then the encode
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(fractions.at(-1)).toBe(1);

    const inference = createInference({ executionProvider: 'cpu' });
    const ref = path.join(tmp, 'ref.png');
    try {
      await upscaleImage(
        {
          input: { path: BUTTERFLY },
          inputName: 'butterfly.png',
          model: resolveModel('digital-art-4x', [ONNX_DIR]),
          scale: 4,
          format: 'png',
          compression: 0,
          outputPath: ref,
          tileSize: 32,
        },
        inference,
      );
    } finally {
      await inference.release();
    }
    const [a, b] = await Promise.all([out, ref].map((f) => sharp(f).raw().toBuffer()));
    expect(a!.length).toBe(256 * 256 * 3);
    let maxDiff = 0;
    for (let i = 0; i < a!.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a![i]! - b![i]!));
    expect(maxDiff).toBe(0);
  });

  it('keeps errors apart across the thread: an ImageInputError by name, a ContractError as one', async () => {
    const text = path.join(tmp, 'notes.png');
    await writeFile(text, 'not an image at all');
    const bad = await core.upscaleFile(job({ inputPath: text, inputName: 'notes.png' })).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Error);
    expect((bad as Error).name).toBe('ImageInputError');
    expect((bad as Error).message).toContain('"notes.png"');
    expect((bad as Error).stack ?? '').not.toContain('coreWorker');

    const custom = await core.upscaleFile(job({ model: 'custom:nothing-here' })).catch((e: unknown) => e);
    expect(isContractError(custom)).toBe(true);
    expect(custom).toMatchObject({ status: 400 });
    expect(existsSync(path.join(tmp, 'out.png'))).toBe(false);
  });

  it('a cancel mid-run rejects with the caller reason and leaves no output and no temp file', async () => {
    const outDir = path.join(tmp, 'cancel-out');
    await mkdir(outDir);
    // The worker thread shares this process's environment, so the test gate reaches it.
    const gate = await createTestGate({ inProcess: true });
    await gate.hold('core-first-tile');
    const held = createCore({
      executionProvider: 'cpu',
      models: { modelDirs: [ONNX_DIR], denoiseCacheDir: path.join(tmp, 'cache') },
    });
    try {
      const abort = new AbortController();
      const reason = new Error('stop, please');
      const outputPath = path.join(outDir, 'never.png');
      const running = held.upscaleFile(job({ outputPath }), { signal: abort.signal }).catch((e: unknown) => e);
      await gate.reached('core-first-tile'); // after its first tile, and no further
      abort.abort(reason);
      await gate.release('core-first-tile');
      expect(await running).toBe(reason);
      expect(await readdir(outDir)).toEqual([]);
    } finally {
      await held.close();
      await gate.close();
    }
  });

  it('refuses work after close, without a worker', async () => {
    const closed = createCore({ executionProvider: 'cpu', models: { modelDirs: [ONNX_DIR] } });
    await closed.close();
    await expect(closed.upscaleFile(job({}))).rejects.toThrow('the upscaling core is closed');
  });
});
