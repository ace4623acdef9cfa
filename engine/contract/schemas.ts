/**
 * Every body of the contract as a zod object: what clients send to the four endpoints (and the
 * get-account extension) and what the service answers. One declaration serves three readers:
 * - the engine validates requests with them (validate.ts, which adds the contract's exact messages);
 * - the HTTP server serialises its 200 answers from their JSON Schema (engine/server/routes);
 * - the remote client parses every answer with them (app/remote), so a misbehaving service is a clear
 *   "unexpected response" error instead of an `undefined` deep inside the app.
 * The TypeScript types of shapes.ts are inferred from these objects, so the two cannot drift.
 */
import { z } from 'zod';
import {
  COMPRESSION_MAX,
  COMPRESSION_MIN,
  INPUT_MIME_TYPES,
  MODEL_NAMES,
  OUTPUT_FORMATS,
  SCALES,
  TASK_STATUSES,
} from './enums.js';

const count = z.number().int().nonnegative();
const epochMs = z.number();

export const modelNameSchema = z.union([z.enum(MODEL_NAMES), z.templateLiteral(['custom:', z.string().min(1)])]);
export const scaleSchema = z.literal(SCALES);
export const saveImageAsSchema = z.enum(OUTPUT_FORMATS);
export const taskStatusSchema = z.enum(TASK_STATUSES);
export const inputMimeTypeSchema = z.enum(INPUT_MIME_TYPES);

export const dimensionsSchema = z.object({ width: count, height: count });

export const fileDataSchema = z.object({
  fileName: z.string(),
  fileType: z.string(),
  fileSize: count,
  originalFileName: z.string(),
  /** Storage path relative to the data store; passed back to start-task for uploaded files. */
  path: z.string(),
  createdAt: epochMs,
  expiresAt: epochMs,
  dimensions: dimensionsSchema,
  /** extension: signed, expiring URL that streams the file to its owner (set by the HTTP server). */
  downloadLink: z.string().optional(),
  /** extension: with enhanceFace, faces found in this image and how many were enhanced. */
  faces: z.object({ found: count, enhanced: count }).optional(),
});

export const partUrlSchema = z.object({ partNumber: z.number().int().min(1), signedUrl: z.string() });

export const uploadSessionSchema = z.object({
  uploadId: z.string(),
  partUrls: z.array(partUrlSchema),
  partSize: z.number().int().positive(),
  fileName: z.string(),
  fileType: inputMimeTypeSchema,
  fileSize: z.number().int().positive(),
  originalFileName: z.string(),
  /** The key to send as complete-multipart-upload's `key` and as `files[].path` in start-task. */
  path: z.string(),
  createdAt: epochMs,
  expiresAt: epochMs,
});

export const completeMultipartUploadResultSchema = z.object({ status: z.literal('success') });

/** extension: answer of a part PUT (the ETag is also the response header, as S3 does). */
export const storedPartSchema = z.object({ ETag: z.string().min(1), size: count });

export const startTaskResultSchema = z.object({
  message: z.string(),
  taskId: z.string().min(1),
  creditsToDeduct: count,
});

export const taskStatusDataSchema = z.object({
  status: taskStatusSchema,
  progress: z.string(),
  files: z.array(fileDataSchema),
  deductedCredits: count,
  creditsDeducted: z.boolean(),
  model: modelNameSchema,
  /** extension: the denoise strength the task was started with, when one was given. */
  denoise: z.number().min(0).max(1).optional(),
  scale: scaleSchema,
  saveImageAs: saveImageAsSchema,
  compression: z.number().int().min(COMPRESSION_MIN).max(COMPRESSION_MAX),
  batchMode: z.boolean(),
  /** extension: human-readable reason, present when status is PROCESSING_FAILED. */
  error: z.string().optional(),
  /** extension: things the engine could not do as asked (e.g. face enhancement not applied). */
  warnings: z.array(z.string()).optional(),
  /** extension: estimated whole seconds until the task is PROCESSED, while it runs (time-weighted over tiles and encode). */
  etaSeconds: count.optional(),
});

export const taskRecordSchema = z.object({
  id: z.string(),
  userId: z.string(),
  email: z.string(),
  files: z.array(fileDataSchema),
  filesCount: count,
  enhanceFace: z.boolean(),
  model: modelNameSchema,
  scale: scaleSchema,
  saveImageAs: saveImageAsSchema,
  compression: z.number().int().min(COMPRESSION_MIN).max(COMPRESSION_MAX),
  createdAt: epochMs,
  status: taskStatusSchema,
  batchMode: z.boolean(),
  progress: z.string(),
  creditsToDeduct: count,
  currentCredits: count,
  currentExtraCredits: count,
});

/** extension: get-account's answer. */
export const accountDataSchema = z.object({
  userId: z.string(),
  email: z.string(),
  currentCredits: count,
  currentExtraCredits: count,
});

/** extension: get-capabilities' answer — what this service offers beyond the contract's defaults. */
export const capabilitiesSchema = z.object({
  /** Whether start-task accepts enhanceFace: true (a server without a face model answers 400 to it). */
  faceEnhancement: z.boolean(),
  /**
   * The model names start-task accepts on this service now (installed catalog models, then imported `custom:`
   * ones). Optional: an older server leaves it out, and a client then offers every contract model.
   */
  models: z.array(z.string()).optional(),
});

/** The spec's success envelope around any answer. */
export function successBodySchema<T extends z.ZodType>(data: T) {
  return z.object({ status: z.literal('success'), data });
}

/** The spec's request envelope: every JSON request body is `{ "data": … }`. */
export function requestBodySchema<T extends z.ZodType>(data: T) {
  return z.object({ data });
}

export const getUploadUrlRequestSchema = z.object({
  fileSize: z.number().int().positive(),
  fileType: inputMimeTypeSchema,
  originalFileName: z.string().trim().min(1),
});

export const completedPartSchema = z.object({
  PartNumber: z.number().int().min(1).max(10000),
  ETag: z.string().min(1).max(200),
});

export const completeMultipartUploadRequestSchema = z.object({
  uploadId: z.string().min(1).max(200),
  key: z.string().min(1).max(1024),
  parts: z.array(completedPartSchema).min(1).max(10000),
});

export const getTaskStatusRequestSchema = z.object({ taskId: z.string().trim().min(1) });

/**
 * start-task's multipart form fields as they arrive (strings; `files` and `urls` are JSON arrays in a
 * string). validate.ts turns them into a StartTaskRequest with the contract's messages.
 */
export const startTaskFormFieldsSchema = z.object({
  model: z.string(),
  scale: z.string(),
  saveImageAs: z.string(),
  enhanceFace: z.string().optional(),
  compression: z.string().optional(),
  /** extension */
  denoise: z.string().optional(),
  files: z.string().optional(),
  urls: z.string().optional(),
});
