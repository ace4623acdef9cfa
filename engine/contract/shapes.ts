/**
 * Request and response shapes of the contract (spec: "Resources", "Endpoints").
 * Timestamps are Unix epoch milliseconds. Fields marked "extension" are Crisp additions documented in docs/api.md.
 */
import type { z } from 'zod';
import type { SaveImageAs, Scale, TaskModelName } from './enums.js';
import type {
  accountDataSchema,
  capabilitiesSchema,
  completedPartSchema,
  completeMultipartUploadRequestSchema,
  completeMultipartUploadResultSchema,
  dimensionsSchema,
  fileDataSchema,
  getTaskStatusRequestSchema,
  getUploadUrlRequestSchema,
  partUrlSchema,
  startTaskResultSchema,
  storedPartSchema,
  taskRecordSchema,
  taskStatusDataSchema,
  uploadSessionSchema,
} from './schemas.js';

// Bodies on the wire: inferred from the zod objects in schemas.ts (the single declaration).
export type Dimensions = z.infer<typeof dimensionsSchema>;
export type FileData = z.infer<typeof fileDataSchema>;
export type TaskRecord = z.infer<typeof taskRecordSchema>;
export type PartUrl = z.infer<typeof partUrlSchema>;
export type UploadSession = z.infer<typeof uploadSessionSchema>;
export type GetUploadUrlRequest = z.infer<typeof getUploadUrlRequestSchema>;
export type CompletedPart = z.infer<typeof completedPartSchema>;
export type CompleteMultipartUploadRequest = z.infer<typeof completeMultipartUploadRequestSchema>;
export type CompleteMultipartUploadResult = z.infer<typeof completeMultipartUploadResultSchema>;
export type StoredPartAnswer = z.infer<typeof storedPartSchema>;
export type StartTaskResult = z.infer<typeof startTaskResultSchema>;
export type GetTaskStatusRequest = z.infer<typeof getTaskStatusRequestSchema>;
export type TaskStatusData = z.infer<typeof taskStatusDataSchema>;
export type AccountData = z.infer<typeof accountDataSchema>;
export type Capabilities = z.infer<typeof capabilitiesSchema>;

/** An image handed to start-task directly (the `file` part, or the `<index>.file` parts). */
export interface SourceFile {
  originalFileName: string;
  /** The bytes, or a local path the engine may read (in-process callers only). */
  data: Uint8Array | { path: string };
}

/** A reference to a completed upload, as sent in start-task's `files`. Only `path` is required. */
export type UploadedFileRef = Pick<FileData, 'path'> & Partial<FileData>;

export interface TaskSettings {
  model: TaskModelName;
  scale: Scale;
  saveImageAs: SaveImageAs;
  enhanceFace: boolean;
  compression: number;
  /** extension: denoise strength 0–1 for service-lite-4x (1 = the plain model); absent = not asked for. */
  denoise?: number;
}

/** start-task's one image source. */
export type StartTaskSource =
  | { source: 'file'; file: SourceFile[] }
  | { source: 'files'; files: UploadedFileRef[] }
  | { source: 'urls'; urls: string[] };

/** start-task after validation: settings plus exactly one source. */
export type StartTaskRequest = TaskSettings & StartTaskSource;

export interface SuccessBody<T> {
  status: 'success';
  data: T;
}

export function success<T>(data: T): SuccessBody<T> {
  return { status: 'success', data };
}
