/**
 * Request and response shapes of the contract (spec: "Resources", "Endpoints").
 * Timestamps are Unix epoch milliseconds. Fields marked "extension" are Crisp additions documented in docs/api.md.
 */
import type { InputMimeType, SaveImageAs, Scale, TaskModelName, TaskStatus } from './enums.js';

export interface Dimensions {
  width: number;
  height: number;
}

export interface FileData {
  fileName: string;
  fileType: string;
  fileSize: number;
  originalFileName: string;
  /** Storage path relative to the data store; passed back to start-task for uploaded files. */
  path: string;
  createdAt: number;
  expiresAt: number;
  dimensions: Dimensions;
  /** extension: signed, expiring URL that streams the file to its owner (set by the HTTP server). */
  downloadLink?: string;
  /** extension: with enhanceFace, faces found in this image and how many were enhanced. */
  faces?: { found: number; enhanced: number };
}

export interface TaskRecord {
  id: string;
  userId: string;
  email: string;
  files: FileData[];
  filesCount: number;
  enhanceFace: boolean;
  /** A contract model name; `custom:<name>` (extension) only from a local engine with custom models. */
  model: TaskModelName;
  scale: Scale;
  saveImageAs: SaveImageAs;
  compression: number;
  createdAt: number;
  status: TaskStatus;
  batchMode: boolean;
  progress: string;
  creditsToDeduct: number;
  currentCredits: number;
  currentExtraCredits: number;
}

export interface PartUrl {
  partNumber: number;
  signedUrl: string;
}

export interface UploadSession {
  uploadId: string;
  partUrls: PartUrl[];
  partSize: number;
  fileName: string;
  fileType: InputMimeType;
  fileSize: number;
  originalFileName: string;
  /** The key to send as complete-multipart-upload's `key` and as `files[].path` in start-task. */
  path: string;
  createdAt: number;
  expiresAt: number;
}

export interface GetUploadUrlRequest {
  fileSize: number;
  fileType: InputMimeType;
  originalFileName: string;
}

export interface CompletedPart {
  PartNumber: number;
  ETag: string;
}

export interface CompleteMultipartUploadRequest {
  uploadId: string;
  key: string;
  parts: CompletedPart[];
}

export interface CompleteMultipartUploadResult {
  status: 'success';
}

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

/** start-task after validation: settings plus exactly one source. */
export type StartTaskRequest = TaskSettings &
  (
    | { source: 'file'; file: SourceFile[] }
    | { source: 'files'; files: UploadedFileRef[] }
    | { source: 'urls'; urls: string[] }
  );

export interface StartTaskResult {
  message: string;
  taskId: string;
  creditsToDeduct: number;
}

export interface GetTaskStatusRequest {
  taskId: string;
}

export interface TaskStatusData {
  status: TaskStatus;
  progress: string;
  files: FileData[];
  deductedCredits: number;
  creditsDeducted: boolean;
  model: TaskModelName;
  /** extension: the denoise strength the task was started with, when one was given. */
  denoise?: number;
  scale: Scale;
  saveImageAs: SaveImageAs;
  compression: number;
  batchMode: boolean;
  /** extension: human-readable reason, present when status is PROCESSING_FAILED. */
  error?: string;
  /** extension: things the engine could not do as asked (e.g. face enhancement not applied). */
  warnings?: string[];
}

export interface SuccessBody<T> {
  status: 'success';
  data: T;
}

export function success<T>(data: T): SuccessBody<T> {
  return { status: 'success', data };
}
