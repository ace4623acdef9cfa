/**
 * Issue 25, desktop path: a local upscale goes app service → local backend → engine worker process → core,
 * and nothing of the multi-tenant service runs: no task record is written, no status is polled, and the
 * progress the app sees is core's own (engine/core's onProgress, forwarded by app/worker/workerMain.ts).
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLocalBackend } from '../../app/backends/local/localBackend.js';
import type { FromWorker } from '../../app/worker/protocol.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

// Any module of the worker's graph that loads the service's engine or task store records it here: the
// desktop path must not (getTaskStatus, task records and the meter all live behind these two).
const serviceLoaded = vi.hoisted(() => [] as string[]);
vi.mock('../../engine/service/engine.js', async (original) => {
  serviceLoaded.push('engine/service/engine.js');
  return original();
});
vi.mock('../../engine/service/tasks/taskStore.js', async (original) => {
  serviceLoaded.push('engine/service/tasks/taskStore.js');
  return original();
});

let BIRD: string; // set5's bird at 128×128: four 64-px tiles
// Not imported from test/helpers/engineHarness.ts: that module loads the engine, which this test watches for.
const FAST_MODEL = 'digital-art-4x';

async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath, e.name)));
  }
  return out;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-local-core-'));
  BIRD = path.join(dir, 'bird.png');
  await sharp(path.join(IMAGES_DIR, 'set5/bird.png')).resize(128, 128).png().toFile(BIRD);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a local upscale calls core directly', () => {
  it('in the engine worker: core progress and result, no engine, no task store, nothing written but the output', async () => {
    const { startWorkerMain } = await import('../../app/worker/workerMain.js');
    const sent: FromWorker[] = [];
    let exited: number | undefined;
    const main = startWorkerMain({ send: (m) => sent.push(m), onMessage: () => undefined }, (code) => (exited = code));
    const dataDir = path.join(dir, 'worker-data');
    main.handle({
      type: 'init',
      options: { dataDir, modelDirs: [ONNX_DIR], executionProvider: 'cpu', tileSize: 64, precision: 'fp32' },
    });
    // Ready says which providers this runtime offers here, best first; the CPU is always there, last.
    expect(sent).toEqual([{ type: 'ready', devices: expect.arrayContaining(['cpu']) }]);
    const devices = sent[0]?.type === 'ready' ? sent[0].devices : [];
    expect(devices.at(-1)).toBe('cpu');
    for (const d of devices) expect(['webgpu', 'cuda', 'dml', 'coreml', 'cpu']).toContain(d);
    const outputPath = path.join(dir, 'out', 'bird-x2.png');
    main.handle({
      type: 'upscale',
      id: 'j1',
      inputPath: BIRD,
      inputName: 'bird.png',
      settings: { model: FAST_MODEL, scale: 2, saveImageAs: 'png', compression: 0 },
      outputPath,
    });
    await main.idle();

    const progress = sent.filter((m) => m.type === 'progress');
    // Four tiles: core reports after each, and the percents only go up.
    expect(progress.length).toBeGreaterThanOrEqual(3);
    // Core's own fractions, throttled once: sent only when the whole percent or the ETA changed.
    const percents = progress.map((m) => Math.floor(m.fraction * 100));
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    for (let i = 1; i < progress.length; i++)
      expect([percents[i], progress[i]!.etaSeconds]).not.toEqual([percents[i - 1], progress[i - 1]!.etaSeconds]);
    expect(Math.max(...progress.map((m) => m.fraction))).toBeLessThanOrEqual(1);
    const done = sent.find((m) => m.type === 'done');
    expect(done).toMatchObject({
      id: 'j1',
      result: { width: 256, height: 256, provider: 'cpu', precision: 'fp32', streamed: false, warnings: [] },
    });
    const meta = await sharp(outputPath).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([256, 256, 'png']);
    expect(done?.type === 'done' && done.result.bytes).toBe((await stat(outputPath)).size);

    // No task record, no upload, no secret: the worker's data folder holds nothing at all.
    expect(await allFiles(dataDir)).toEqual([]);
    expect(serviceLoaded).toEqual([]);

    main.handle({ type: 'shutdown' });
    await vi.waitFor(() => expect(exited).toBe(0), { timeout: 30_000 });
  });

  it('through the local backend (a real worker process): progress events from core, the output, no task record', async () => {
    const dataDir = path.join(dir, 'backend-data');
    const local = createLocalBackend({
      dataDir,
      modelDirs: [ONNX_DIR],
      executionProvider: 'cpu',
      tileSize: 64,
      precision: 'fp32',
    });
    try {
      // The engine process answers which providers it can use (Engine settings lists only those).
      expect((await local.devices()).at(-1)).toBe('cpu');
      const events: number[] = [];
      const outputPath = path.join(dir, 'out', 'bird-x4.jpg');
      const outcome = await local.upscale({
        inputPath: BIRD,
        inputName: 'bird.png',
        outputPath,
        settings: { model: FAST_MODEL, scale: 4, saveImageAs: 'jpg', compression: 10 },
        onProgress: (p) => events.push(p),
      });
      expect(outcome.dimensions).toEqual({ width: 512, height: 512 });
      // What ran it, for Engine settings' "Last image ran on …".
      expect(outcome.device).toEqual({
        provider: 'cpu',
        precision: 'fp32',
        reason: 'cpu: the execution provider asked for.',
      });
      expect(outcome.creditsDeducted).toBe(0);
      const meta = await sharp(outputPath).metadata();
      expect([meta.width, meta.height, meta.format]).toEqual([512, 512, 'jpeg']);
      expect(outcome.fileSize).toBe((await stat(outputPath)).size);
      // Several distinct percents below 100 (one per tile, from core), then 100 for the finished file.
      const partial = events.filter((p) => p < 100);
      expect(new Set(partial).size).toBeGreaterThanOrEqual(3);
      expect(events).toEqual([...events].sort((a, b) => a - b));
      expect(events.at(-1)).toBe(100);
      expect(await allFiles(dataDir)).toEqual([]);
    } finally {
      await local.close();
    }
  });

  it("refuses a request as start-task did (same sentence), before any work, with core's own code", async () => {
    const dataDir = path.join(dir, 'refusal-data');
    const local = createLocalBackend({ dataDir, modelDirs: [ONNX_DIR], executionProvider: 'cpu' });
    try {
      const err = await local
        .upscale({
          inputPath: BIRD,
          inputName: 'bird.png',
          outputPath: path.join(dir, 'out', 'never.png'),
          // The job asks for faces (the best installed face model) and this models folder has none.
          settings: { model: FAST_MODEL, scale: 4, saveImageAs: 'png', compression: 0, face: { model: null } },
        })
        .catch((e: unknown) => e);
      // A server answers it as a 400; here it keeps the code core raised (issue 38: one error wire).
      expect(err).toMatchObject({ code: 'face-model-missing' });
      expect((err as Error).message).toMatch(
        /^Face enhancement needs a face model and none is installed\. Get one with /,
      );
      expect(await allFiles(path.join(dir, 'out'))).not.toContain('never.png');
    } finally {
      await local.close();
    }
  });
});
