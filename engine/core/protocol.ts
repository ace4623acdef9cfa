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

/**
 * What one job says, on every boundary it crosses: from a core worker thread to the pool, and from the engine
 * process to the app (app/worker/protocol.ts). One vocabulary; `id` is the pool's number or the app's string.
 * A failure is core's error wire (errorWire.ts), so its code and params arrive as core raised them.
 */
export type JobEvent<Id extends number | string> =
  /** `step` (threads only): a model run started and should carry the fraction to step.until in step.seconds. */
  | { type: 'progress'; id: Id; fraction: number; etaSeconds?: number; step?: ProgressStep }
  /** The job is past its last model run and encoding: the next job's inference can start beside it. */
  | { type: 'encoding'; id: Id }
  | { type: 'done'; id: Id; result: UpscaleFileResult }
  | { type: 'failed'; id: Id; error: WireError };

export type FromCoreWorker = JobEvent<number> | { type: 'released' };
