/**
 * Request and response shapes of the contract (spec: "Resources", "Endpoints").
 * Timestamps are Unix epoch milliseconds. Fields marked "extension" are Crisp additions documented in docs/api.md.
 */
import type { z } from 'zod';
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
  StartTaskSource,
  startTaskResultSchema,
  taskRecordSchema,
  TaskSettings,
  taskStatusDataSchema,
  uploadSessionSchema,
} from './schemas.js';

// Bodies on the wire: inferred from the zod objects in schemas.ts (the single declaration).
export type Dimensions = z.infer<typeof dimensionsSchema>;
export type FileData = z.infer<typeof fileDataSchema>;
export type TaskRecord = z.infer<typeof taskRecordSchema>;
export type UploadSession = z.infer<typeof uploadSessionSchema>;
export type GetUploadUrlRequest = z.infer<typeof getUploadUrlRequestSchema>;
export type CompletedPart = z.infer<typeof completedPartSchema>;
export type CompleteMultipartUploadRequest = z.infer<typeof completeMultipartUploadRequestSchema>;
export type CompleteMultipartUploadResult = z.infer<typeof completeMultipartUploadResultSchema>;
export type StartTaskResult = z.infer<typeof startTaskResultSchema>;
export type GetTaskStatusRequest = z.infer<typeof getTaskStatusRequestSchema>;
export type TaskStatusData = z.infer<typeof taskStatusDataSchema>;
export type AccountData = z.infer<typeof accountDataSchema>;
export type Capabilities = z.infer<typeof capabilitiesSchema>;

// What a start-task request is made of, declared beside the schemas that check it.
export type { SourceFile, StartTaskSource, TaskSettings, UploadedFileRef } from './schemas.js';

/** start-task after validation: settings plus exactly one source. */
export type StartTaskRequest = TaskSettings & StartTaskSource;

export interface SuccessBody<T> {
  status: 'success';
  data: T;
}

export function success<T>(data: T): SuccessBody<T> {
  return { status: 'success', data };
}
