/**
 * The typed job core runs, and what it answers. Plain data only: a job crosses to a worker thread by
 * structured clone, so it holds no functions, signals or class instances.
 */
import type { SaveImageAs, Scale, SizeRequest, TaskSettings } from '../contract/index.js';
import type { DetectOptions } from './faces/detect.js';
import type { FaceReport } from './faces/faceStage.js';
import type { ExecutionProvider, Precision, PrecisionRequest } from './inference/index.js';
import type { MetadataRequest } from './pipeline/metadata.js';
import type { ImageLimits } from './pipeline/probe.js';
import type { ProgressStep } from './pipeline/progress.js';

/**
 * Face enhancement of one job: the one face vocabulary, from the contract's `enhanceFace` to the face stage.
 * Model and strength travel with the job, so changing the strength never restarts anything.
 */
export interface FaceJob {
  /** Catalog face model name or `custom:<name>`; null: the best installed one. */
  model: string | null;
  /** 0..1: share of the restored face in the blend (default 1). */
  strength?: number;
  /** Detector thresholds (tests, benchmarks); defaults otherwise. */
  detect?: DetectOptions;
}

export interface UpscaleFileJob {
  /** The image to read. */
  inputPath: string;
  /** The user's name for it, used in messages. */
  inputName: string;
  /** Where the result is written atomically (temp + rename); on failure or cancel nothing exists there. */
  outputPath: string;
  /** A contract model name or `custom:<name>` (resolved in the core's model sources). */
  model: TaskSettings['model'];
  /** service-lite-4x only: 0–1 blend with its weak-denoise twin; absent or 1: the plain model. */
  denoise?: number;
  scale: Scale;
  /**
   * An exact output size instead of `scale` (engine/contract/geometry.ts): the model pass is chosen to reach
   * it, then one Lanczos-3 resample lands on it. With two passes, the second pass reaches the size.
   */
  size?: SizeRequest;
  format: SaveImageAs;
  /** 0–100, 0 = best quality. */
  compression: number;
  /** 2: the result goes through the model again (×4 twice is ×16). Default 1. */
  passes?: 1 | 2;
  /** A 1× restoration model run over the whole image before the upscaler (checked by models/preModel.ts). */
  preModel?: string;
  /** What the output keeps of the input's metadata, and the provenance record; absent: EXIF and an sRGB tag. */
  metadata?: MetadataRequest;
  face?: FaceJob;
  /** Tile side in input pixels; default chosen from the image and the provider. */
  tileSize?: number;
  /** fp32, int8 or auto; default: the core's precision. */
  precision?: PrecisionRequest;
  /** Image limits (pixels, streaming threshold, disk reserve); defaults: the pipeline's. */
  limits?: Partial<ImageLimits>;
  /**
   * Whose turn this job's tiles take (tileTurns.ts): jobs with different keys share a worker thread and take
   * their model runs in turn, so another caller's image runs beside a long one instead of after it. The service
   * passes the task's user; absent: '' (the desktop's and the CLI's jobs, one caller, run in order).
   */
  turnKey?: string;
}

export interface UpscaleFileResult {
  width: number;
  height: number;
  /** Bytes of the written file. */
  bytes: number;
  provider: ExecutionProvider;
  /** The precision the model ran at (int8 only on the CPU provider). */
  precision: Precision;
  /** Why the job ran on `provider` (auto's choice for its size, or the provider asked for): one sentence. */
  providerReason?: string;
  /** Whether the output streamed through a disk raster (huge images). */
  streamed: boolean;
  warnings: string[];
  /** With a face job: faces found and enhanced. */
  faces?: FaceReport;
}

/**
 * Progress of one job: a fraction 0..1 that never goes backwards (1 once the file is in place), an ETA, and as
 * a model run starts the step it should make (pipeline/progress.ts; the pool ticks through it, progressTicker.ts).
 */
export type CoreProgress = (fraction: number, etaSeconds?: number, step?: ProgressStep) => void;

export interface UpscaleFileOptions {
  /** Aborting stops the job within a tile; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  onProgress?: CoreProgress;
  /**
   * Called once when the job is past its last model run (encoding and writing remain): a caller that hands core
   * its images one at a time can pass the next one now, and its decode and inference overlap this one's encode
   * (the pool takes at most one such job per worker). Never called for a job that fails before it.
   */
  onEncoding?: () => void;
}
