/**
 * The engine's in-process API: the contract's four operations plus what the HTTP server needs to move
 * bytes (part uploads, downloads). Every method validates its raw input with engine/contract and throws
 * ContractError on refusal; the HTTP server is a thin transport over exactly this interface.
 */
import type {
  CompleteMultipartUploadResult,
  FileData,
  SourceFile,
  StartTaskResult,
  TaskRecord,
  TaskStatusData,
  UploadSession,
} from '../contract/index.js';
import type { MetadataPolicy } from '../core/pipeline/metadataPolicy.js';

/** Who is calling. Local use has one implicit caller; the server derives it from X-API-Key. */
export interface Caller {
  userId: string;
  email: string;
}

export const LOCAL_CALLER: Caller = { userId: 'local', email: 'local@localhost' };

/** What start-task received, before validation: form fields as strings or typed values, and direct files. */
export interface StartTaskInput {
  fields: Record<string, unknown>;
  file?: SourceFile[];
  /**
   * The `file` entries given by path are temporary files the engine may move into the task (the
   * server's streamed parts) instead of copying them.
   */
  moveFiles?: boolean;
  /**
   * Aborted once nobody waits for the answer (a server's client closed the connection). Looked at just before
   * the task and its reservation are saved: an abandoned request saves and reserves nothing, however long its
   * inputs took to read; one abandoned after that point is an ordinary task (charged once, if it is polled).
   */
  signal?: AbortSignal;
  /**
   * extension (in-process callers only, one input): write the output straight to this path (a temp name in
   * its folder, then rename) instead of into the task folder, so it is written once and never copied.
   */
  outputPath?: string;
  /**
   * extension (in-process callers only): 2 = double upscale, the first pass's output goes through the model
   * again (×4 twice is ×16). Not a contract field: a service prices one pass per task.
   */
  passes?: 1 | 2;
  /**
   * extension (in-process callers only): a 1× restoration model (a catalog or `custom:` name) run over each
   * image before the upscaler, in the same task. Not a contract field: a service prices one model per task.
   */
  preModel?: string;
  /**
   * extension (in-process callers only): what the output keeps of the input's metadata, with a provenance record
   * in XMP unless `strip`. Absent: the input's EXIF and an sRGB tag (what a service's outputs carry).
   */
  metadata?: MetadataPolicy;
}

export interface StoredPart {
  etag: string;
  size: number;
}

export interface OutputFile {
  /** A local path, or with object storage the object's key. */
  path: string;
  file: FileData;
  /** Object storage: a short-lived presigned URL that serves the bytes (the download route redirects to it). */
  redirect?: string;
}

export interface UpscalingEngine {
  getUploadUrl(caller: Caller, body: unknown): Promise<UploadSession>;
  /** Stores one part addressed by a signed part URL (its path and query); answers the part's ETag. */
  putUploadPart(signedUrl: string, bytes: AsyncIterable<Uint8Array> | Uint8Array): Promise<StoredPart>;
  completeMultipartUpload(caller: Caller, body: unknown): Promise<CompleteMultipartUploadResult>;
  startTask(caller: Caller, input: StartTaskInput): Promise<StartTaskResult>;
  getTaskStatus(caller: Caller, body: unknown): Promise<TaskStatusData>;
  /** The full task record (spec "Task record"); throws taskNotFound for unknown or foreign ids. */
  getTaskRecord(caller: Caller, taskId: string): Promise<TaskRecord>;
  /** Resolves an output file of the caller's task for download; throws notFound otherwise. */
  openOutput(caller: Caller, taskId: string, fileName: string): Promise<OutputFile>;
  /** Resolves when every queued task has ended (tests, graceful shutdown). */
  idle(): Promise<void>;
  /** extension: whether enhanceFace can be honoured (a face model was configured and found). */
  readonly faceEnhancement: boolean;
  /** extension: the model names start-task accepts now (installed catalog models, then imported `custom:` ones). */
  installedModels(): Promise<string[]>;
  close(): Promise<void>;
}
