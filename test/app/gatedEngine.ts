/**
 * The set-up the queue tests share: a real local engine (its engine processes inherit this process's test gate,
 * so work is held at known points instead of raced) in a fresh folder, made before a describe block's tests and
 * closed after them, and the PNG ×2 settings of the fast model they queue with.
 */
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createLocalBackend, type LocalBackend } from '../../app/backends/local/localBackend.js';
import type { JobSettings } from '../../app/jobs/jobQueue.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { createTestGate, type TestGate } from '../helpers/testGate.js';

export interface GatedEngine {
  /** The block's temp folder (the engine's data is in its `engine/`). */
  readonly dir: string;
  readonly local: LocalBackend;
  readonly gate: TestGate;
}

/**
 * Registers beforeAll/afterAll for the calling describe block; the fields are set once beforeAll has run.
 * `tileSize` is small so a hold or a cancel lands between tiles of the tiny test images.
 */
export function useGatedEngine(prefix: string, tileSize: number): GatedEngine {
  const engine = {} as { dir: string; local: LocalBackend; gate: TestGate };
  beforeAll(async () => {
    engine.dir = await tempDir(prefix);
    engine.gate = await createTestGate({ inProcess: true });
    engine.local = createLocalBackend({
      dataDir: path.join(engine.dir, 'engine'),
      modelDirs: [ONNX_DIR],
      executionProvider: 'cpu',
      tileSize,
    });
  });
  afterAll(async () => {
    await engine.local.close();
    await removeDir(engine.dir);
    await engine.gate.close();
  });
  return engine;
}

/** The fast model ×2 to lossless PNG in `outputFolder`, no faces. */
export function pngSettings(outputFolder: string, template: string, overwrite: JobSettings['overwrite']): JobSettings {
  return { model: FAST_MODEL, scale: 2, format: 'png', compression: 0, face: false, outputFolder, template, overwrite };
}
