/**
 * Messages between the app and the engine worker process (structured-clone / JSON safe). A failure crosses as
 * core's error wire (engine/core/errorWire.ts), the same shape core's worker threads send: its catalog code,
 * status and params arrive as core raised them.
 */
import type { UpscaleFileResult, WireError } from '../../engine/core/index.js';
import type { UpscaleSettings } from '../backends/backend.js';

export interface WorkerEngineOptions {
  dataDir: string;
  modelDirs?: string[];
  /** The models directory whose custom/ registry is offered (`custom:<name>` models); absent = none. */
  customModelsDir?: string;
  executionProvider?: string;
  threads?: number;
  tileSize?: number;
  precision?: 'auto' | 'fp32' | 'int8';
}

/**
 * One local upscale: the backend request's settings as they are (start-task's names plus the local extensions,
 * and the job's `face`: model and strength travel with each job, never with the worker).
 */
export interface LocalUpscale {
  type: 'upscale';
  jobId: string;
  inputPath: string;
  inputName: string;
  settings: UpscaleSettings;
  /** Written there directly (temp + rename). */
  outputPath: string;
}

export type ToWorker =
  | { type: 'init'; options: WorkerEngineOptions }
  | LocalUpscale
  | { type: 'cancel'; jobId: string }
  | { type: 'shutdown' };

export type FromWorker =
  /** devices: the execution providers this runtime can use here, best first (what Automatic tries; cpu last). */
  | { type: 'ready'; devices: string[] }
  | { type: 'initFailed'; error: WireError }
  | { type: 'progress'; jobId: string; percent: number; etaSeconds?: number }
  /** The job's model work is done (core's onEncoding): the app may send the next one to overlap its encode. */
  | { type: 'encoding'; jobId: string }
  | { type: 'done'; jobId: string; outputPath: string; result: UpscaleFileResult }
  /** A stopped job fails with the catalog's `cancelled`. */
  | { type: 'failed'; jobId: string; error: WireError };
