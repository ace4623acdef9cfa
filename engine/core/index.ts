/**
 * core: the upscaling library — one typed job in, one image file out. Probe, decode, tile plan, inference,
 * faces, stitch, encode, metadata, huge-image streaming, model resolution and denoise blends all happen in
 * a pool of worker threads (workerPool.ts); the caller's event loop only passes messages. It knows nothing
 * of users, credits, tasks or HTTP: the service (engine.ts, tasks/) and the app call it.
 *
 * This file is core's public entry: app/ and electron/ import core only from here (docs/architecture.md).
 * Light, exported as they are (no npm package is loaded by importing this file):
 *   createCore (the pool's threads load sharp and onnxruntime when they start, never the caller),
 *   the job and result types (job.ts), TEST_GATE_ENV, CRISP_VERSION (version.ts),
 *   EXECUTION_PROVIDERS (inference/providers.ts), cpuFeatures (inference/cpuFeatures.ts),
 *   sniffImageType (pipeline/imageSniff.ts), the metadata policies (pipeline/metadataPolicy.ts),
 *   ImageInputError (pipeline/errors.ts), metadataRequest (provenance.ts),
 *   where model files live and ModelNotInstalledError (models/modelFiles.ts), model names and suggestions
 *   (models/modelNames.ts), licence labels (models/licence.ts), the face models' catalog rows and lookups
 *   (faces/faceModels.ts), the error wire every boundary speaks (errorWire.ts: toWire, fromWire); and the
 *   heavy modules' types, as types.
 * Lazy, behind a loader that import()s the module (what it loads):
 *   loadModelCatalog   models/catalog.ts: the catalog, listModels, resolveModel, defaultModel (zod)
 *   loadCustomModels   models/customModels.ts: list and remove imported models (zod)
 *   loadInputs         inputs.ts: checkedInput, the input check every upscale passes (sharp)
 *   loadPipeline       pipeline/index.ts: probe, decode, tiles, encode, checkPassesFit (sharp)
 *   loadImageMetadata  pipeline/metadata.ts: readProvenance and the metadata blocks (sharp)
 *   loadInference      inference/index.ts: onnxruntime sessions, autoProviders (onnxruntime, zod)
 *   loadInt8Variants   inference/int8Variant.ts: int8 variants and their manifest (zod)
 *   loadPrecision      inference/precision.ts: choosePrecision, int8Verdict (zod)
 *   loadJobCheck       checkJob.ts: checkRequest, checkImageFits, imageJob — the one request check (zod, sharp)
 * Getting models in — downloads, imports, checkpoint conversion, int8 builds — is the part above core,
 * engine/convert (its entry: engine/convert/index.ts); an upscale never loads it.
 */
import { holdPoint, inputPoint } from './testGate.js';
import os from 'node:os';
import path from 'node:path';
import { modelSearchDirs } from './models/modelFiles.js';
import type { TaskModelSources } from './models/taskModel.js';
import type { ExecutionProviderRequest, PrecisionRequest } from './inference/index.js';
import type { UpscaleFileJob, UpscaleFileOptions, UpscaleFileResult } from './job.js';
import { WorkerPool } from './workerPool.js';

export type { CoreProgress, FaceJob, UpscaleFileJob, UpscaleFileOptions, UpscaleFileResult } from './job.js';
export { TEST_GATE_ENV } from './testGate.js';
export { CRISP_VERSION } from './version.js';
export * from './inference/providers.js';
export * from './inference/cpuFeatures.js';
export * from './pipeline/imageSniff.js';
export * from './pipeline/metadataPolicy.js';
export * from './pipeline/errors.js';
export * from './provenance.js';
export * from './models/modelFiles.js';
export * from './models/modelNames.js';
export * from './models/licence.js';
export * from './faces/faceModels.js';
export * from './errorWire.js';

// The heavy modules' types: erased, so they load nothing.
export type { CheckedInput, InputLimits, InputTarget } from './inputs.js';
export type { CatalogEntry, CustomModelEntry, ListedModel, ResolvedModel } from './models/catalog.js';
export type { CustomModel, CustomModelListing } from './models/customModels.js';
export type { TaskModelSources } from './models/taskModel.js';
export type {
  ExecutionProvider,
  ExecutionProviderChoice,
  Precision,
  PrecisionChoice,
  PrecisionRequest,
} from './inference/index.js';
export type { Int8Manifest, Int8Variant } from './inference/int8Variant.js';
export type { Fp16Manifest } from './inference/fp16Variant.js';
export type { CheckedRequest, JobChoices, JobRequest } from './checkJob.js';
export type { JobEvent } from './protocol.js';
export type { MetadataRequest, Provenance } from './pipeline/metadata.js';

export const loadModelCatalog = () => import('./models/catalog.js');
export const loadCustomModels = () => import('./models/customModels.js');
export const loadInputs = () => import('./inputs.js');
export const loadPipeline = () => import('./pipeline/index.js');
export const loadImageMetadata = () => import('./pipeline/metadata.js');
export const loadInference = () => import('./inference/index.js');
export const loadInt8Variants = () => import('./inference/int8Variant.js');
export const loadFp16Variants = () => import('./inference/fp16Variant.js');
export const loadPrecision = () => import('./inference/precision.js');
export const loadJobCheck = () => import('./checkJob.js');

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
