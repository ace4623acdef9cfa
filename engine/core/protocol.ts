/** Messages between the pool (workerPool.ts) and a core worker thread (coreWorker.ts); structured-clone safe. */
import type { TaskModelSources } from './models/taskModel.js';
import type { ExecutionProviderRequest, PrecisionRequest } from './inference/index.js';
import type { WireError } from './errorWire.js';
import type { UpscaleFileJob, UpscaleFileResult } from './job.js';
import type { ProgressStep } from './pipeline/progress.js';

/** What every worker of a pool is started with (workerData). */
export interface CoreWorkerSetup {
  executionProvider: ExecutionProviderRequest;
  /** onnxruntime intra-op threads of this worker's sessions; absent: onnxruntime's choice. */
  threads?: number;
  precision: PrecisionRequest;
  models: TaskModelSources;
  /** How much lower than the caller's the worker thread's priority is (Linux; 0: the same). */
  niceness: number;
}

export type ToCoreWorker =
  { type: 'run'; id: number; job: UpscaleFileJob } | { type: 'cancel'; id: number } | { type: 'release' };

export type FromCoreWorker =
  /** `step`: a model run started and should carry the fraction to step.until in step.seconds (progressTicker.ts). */
  | { type: 'progress'; id: number; fraction: number; etaSeconds?: number; step?: ProgressStep }
  /** The job is past its last model run and encoding: the worker can take the next job's inference. */
  | { type: 'encoding'; id: number }
  | { type: 'done'; id: number; result: UpscaleFileResult }
  | { type: 'failed'; id: number; error: WireError }
  | { type: 'released' };
