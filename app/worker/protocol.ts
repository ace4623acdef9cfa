/**
 * Messages between the app and the engine worker process (structured-clone / JSON safe). What a job says back is
 * core's own JobEvent (engine/core/protocol.ts), the messages core's worker threads send the pool: progress as a
 * fraction, encoding, done, and a failure as core's error wire (its catalog code, status and params as core
 * raised them).
 */
import type { JobEvent, PrecisionRequest, WireError } from '../../engine/core/index.js';
import type { UpscaleSettings } from '../backends/backend.js';

export interface WorkerEngineOptions {
  dataDir: string;
  modelDirs?: string[];
  /** The models directory whose custom/ registry is offered (`custom:<name>` models); absent = none. */
  customModelsDir?: string;
  executionProvider?: string;
  threads?: number;
  tileSize?: number;
  precision?: PrecisionRequest;
}

/**
 * One local upscale: the backend request's settings as they are (start-task's names plus the local extensions,
 * and the job's `face`: model and strength travel with each job, never with the worker).
 */
export interface LocalUpscale {
  type: 'upscale';
  id: string;
  inputPath: string;
  inputName: string;
  settings: UpscaleSettings;
  /** Written there directly (temp + rename). */
  outputPath: string;
}

export type ToWorker =
  { type: 'init'; options: WorkerEngineOptions } | LocalUpscale | { type: 'cancel'; id: string } | { type: 'shutdown' };

export type FromWorker =
  /** devices: the execution providers this runtime can use here, best first (what Automatic tries; cpu last). */
  | { type: 'ready'; devices: string[] }
  | { type: 'initFailed'; error: WireError }
  /** A stopped job fails with the catalog's `cancelled`. */
  | JobEvent<string>;
