/** The engine's persisted task: the contract's task record plus what it needs to run and recover. */
import type { MetadataPolicy } from '../../core/pipeline/metadataPolicy.js';
import type { Dimensions, FileData, TaskSettings, TaskStatus } from '../../contract/index.js';

export interface TaskInput {
  originalFileName: string;
  /** Absolute path of the input bytes (copied into the task folder, or a completed upload). */
  path?: string;
  /** For `urls` tasks: fetched when the task runs. */
  url?: string;
  /**
   * With object storage: the input's key in the bucket (`tasks/<id>/inputs/<i>`). The worker that runs the
   * task downloads it and sets `path` to its local copy.
   */
  objectKey?: string;
  dimensions?: Dimensions;
}

export interface StoredTask {
  id: string;
  userId: string;
  email: string;
  settings: TaskSettings;
  createdAt: number;
  updatedAt: number;
  status: TaskStatus;
  /** 0–100, never decreasing; 100 only when PROCESSED. */
  progress: number;
  batchMode: boolean;
  inputs: TaskInput[];
  outputs: FileData[];
  creditsToDeduct: number;
  creditsDeducted: boolean;
  deductedCredits: number;
  error?: string;
  warnings: string[];
  /** Estimated seconds left while running (the current image's ETA plus the same for each image after it). */
  etaSeconds?: number;
  /** Where the single output is written, when the in-process caller chose it (StartTaskInput.outputPath). */
  destination?: string;
  /** 2 when the in-process caller asked for a double upscale (StartTaskInput.passes); absent = one pass. */
  passes?: 2;
  /** A 1× model run over each image before the upscaler (StartTaskInput.preModel); absent = none. */
  preModel?: string;
  /** The in-process caller's metadata policy (StartTaskInput.metadata); absent: EXIF and an sRGB tag. */
  metadata?: MetadataPolicy;
  /** Execution provider that ran the model (diagnostics). */
  provider?: string;
  /** How many start-ups found this task unfinished (crash recovery; see MAX_RESUMES in engine.ts). */
  resumes?: number;
}
