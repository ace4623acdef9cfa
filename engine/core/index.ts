/**
 * core: the upscaling library — one typed job in, one image file out. Probe, decode, tile plan, inference,
 * faces, stitch, encode, metadata, huge-image streaming, model resolution and denoise blends all happen in
 * a pool of worker threads (workerPool.ts); the caller's event loop only passes messages. It knows nothing
 * of users, credits, tasks or HTTP: the service (engine.ts, tasks/) and the app call it.
 */
import { holdPoint, inputPoint } from './testGate.js';
import os from 'node:os';
import path from 'node:path';
import { modelSearchDirs } from './models/catalog.js';
import type { TaskModelSources } from './models/taskModel.js';
import type { ExecutionProviderRequest, PrecisionRequest } from './inference/index.js';
import type { UpscaleFileJob, UpscaleFileOptions, UpscaleFileResult } from './job.js';
import { WorkerPool } from './workerPool.js';

export type { CoreProgress, FaceJob, UpscaleFileJob, UpscaleFileOptions, UpscaleFileResult } from './job.js';
export { TEST_GATE_ENV } from './testGate.js';
export { checkedInput, fileTooLarge, type CheckedInput, type InputLimits, type InputTarget } from './inputs.js';

export interface CoreOptions {
  /** auto (default), cpu, webgpu, cuda, dml or coreml. */
  executionProvider?: ExecutionProviderRequest;
  /** The thread setting: CPU threads the whole pool's inference may use; absent: onnxruntime's choice. */
  threads?: number;
  /** Worker threads, i.e. images upscaled at once (default 1). */
  workers?: number;
  /** Default precision of jobs that do not say (default auto). */
  precision?: PrecisionRequest;
  /**
   * How much lower the pool's threads are scheduled than the caller's (Linux nice steps; default 0, equal).
   * A higher value serves the caller's event loop first on a busy machine, but on a machine shared with other
   * processes it also hands them the image's CPU share (measured: a 16 MP job took 237 s at 10 against 143 s
   * at 0 under the same outside load), so it is opt-in.
   */
  niceness?: number;
  /** Catalog dirs, the custom registry and the denoise cache jobs' models are resolved from. */
  models?: Partial<TaskModelSources>;
}

export interface Core {
  /** Upscales one file; CPU-heavy work runs in the pool, never on the caller's event loop. */
  upscaleFile(job: UpscaleFileJob, opts?: UpscaleFileOptions): Promise<UpscaleFileResult>;
  /** Starts the worker threads ahead of the first job (they load their modules meanwhile). */
  warm(): void;
  /** Stops the pool's worker threads and their sessions; later calls are refused. */
  close(): Promise<void>;
}

export function createCore(opts: CoreOptions = {}): Core {
  const workers = Math.max(1, Math.floor(opts.workers ?? 1));
  const modelDirs = opts.models?.modelDirs ?? modelSearchDirs();
  const models: TaskModelSources = {
    modelDirs,
    ...(opts.models?.customModelsDir !== undefined ? { customModelsDir: opts.models.customModelsDir } : {}),
    // Callers with a data folder pass theirs; never a models folder, which may be read-only or shared.
    denoiseCacheDir: opts.models?.denoiseCacheDir ?? path.join(os.tmpdir(), 'crisp-denoise-cache'),
  };
  const threads = opts.threads ? Math.max(1, Math.floor(opts.threads / workers)) : undefined;
  const pool = new WorkerPool(workers, {
    executionProvider: opts.executionProvider ?? 'auto',
    precision: opts.precision ?? 'auto',
    models,
    niceness: Math.max(0, Math.min(19, Math.floor(opts.niceness ?? 0))),
    ...(threads ? { threads } : {}),
  });
  return {
    async upscaleFile(job, o) {
      // Test-only (CRISP_TEST_GATE_DIR; a no-op in production): hold a job by its input's name, on this side
      // of the pool, so a test can act on the desktop's work (Stop, a killed engine) at a known point.
      await holdPoint(inputPoint(job.inputName), o?.signal);
      return pool.run(job, o);
    },
    warm: () => pool.warm(),
    close: () => pool.close(),
  };
}
