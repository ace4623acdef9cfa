/**
 * zod schemas of every response body of the contract (the `data` inside `{ "status": "success", "data": … }`),
 * and of get-account. The remote client parses each answer with them, so a server that answers the wrong
 * shape is a clear error instead of `undefined` somewhere later; tests check the engine's own answers against
 * them. Objects are loose: a newer server may add fields, and that must not break an older client.
 * Each schema is checked against its TypeScript interface in shapes.ts (`Fits` below), so the two cannot drift.
 */
import { z } from 'zod';
import { INPUT_MIME_TYPES, isCustomModelName, MODEL_NAMES, OUTPUT_FORMATS, SCALES, TASK_STATUSES } from './enums.js';
import type {
  CompleteMultipartUploadResult,
  FileData,
  StartTaskResult,
  TaskStatusData,
  UploadSession,
} from './shapes.js';

const count = z.number().int().nonnegative();
const timestamp = z.number().nonnegative();

export const modelNameSchema = z.union([
  z.enum(MODEL_NAMES),
  z.string().refine(isCustomModelName, 'expected a contract model name or custom:<name>') as unknown as z.ZodType<`custom:${string}`>,
]);
export const scaleSchema = z.number().refine((n): n is (typeof SCALES)[number] => (SCALES as readonly number[]).includes(n), 'expected an integer from 1 to 8') as unknown as z.ZodType<(typeof SCALES)[number]>;

export const fileDataSchema = z.looseObject({
  fileName: z.string(),
  fileType: z.string(),
  fileSize: count,
  originalFileName: z.string(),
  path: z.string(),
  createdAt: timestamp,
  expiresAt: timestamp,
  dimensions: z.looseObject({ width: count, height: count }),
  downloadLink: z.string().optional(),
});

export const uploadSessionSchema = z.looseObject({
  uploadId: z.string().min(1),
  partUrls: z.array(z.looseObject({ partNumber: z.number().int().positive(), signedUrl: z.string().min(1) })),
  partSize: z.number().int().positive(),
  fileName: z.string(),
  fileType: z.enum(INPUT_MIME_TYPES),
  fileSize: z.number().int().positive(),
  originalFileName: z.string(),
  path: z.string().min(1),
  createdAt: timestamp,
  expiresAt: timestamp,
});

export const completeMultipartUploadResultSchema = z.looseObject({ status: z.literal('success') });

export const startTaskResultSchema = z.looseObject({
  message: z.string(),
  taskId: z.string().min(1),
  creditsToDeduct: z.number().nonnegative(),
});

export const taskStatusDataSchema = z.looseObject({
  status: z.enum(TASK_STATUSES),
  progress: z.string(),
  files: z.array(fileDataSchema),
  deductedCredits: z.number().nonnegative(),
  creditsDeducted: z.boolean(),
  model: modelNameSchema,
  denoise: z.number().min(0).max(1).optional(),
  scale: scaleSchema,
  saveImageAs: z.enum(OUTPUT_FORMATS),
  compression: z.number().int().min(0).max(100),
  batchMode: z.boolean(),
  error: z.string().optional(),
  warnings: z.array(z.string()).optional(),
});

/** extension: get-account's data. Each field is optional (other services may show less), but never of the wrong type. */
export const accountDataSchema = z.looseObject({
  userId: z.string().optional(),
  email: z.string().optional(),
  currentCredits: z.number().optional(),
  currentExtraCredits: z.number().optional(),
});
export type AccountData = z.infer<typeof accountDataSchema>;

/** The success envelope every JSON answer of the four endpoints is wrapped in. */
export const successEnvelopeSchema = z.looseObject({ status: z.literal('success'), data: z.unknown() });

/** The answer of a part PUT: the ETag header is the contract; a JSON `{ data: { ETag } }` body is accepted too. */
export const partUploadResultSchema = z.looseObject({ ETag: z.string().min(1).optional() });

export const RESPONSE_SCHEMAS = {
  'get-upload-url': uploadSessionSchema,
  'complete-multipart-upload': completeMultipartUploadResultSchema,
  'start-task': startTaskResultSchema,
  'get-task-status': taskStatusDataSchema,
  'get-account': accountDataSchema,
} as const;
export type ResponseRoute = keyof typeof RESPONSE_SCHEMAS;
export type ResponseData = { [R in ResponseRoute]: z.infer<(typeof RESPONSE_SCHEMAS)[R]> };

/** A one-line description of the first thing wrong with a value, e.g. `files[0].fileSize: expected number`. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const where = issue.path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    '',
  );
  return where ? `${where}: ${issue.message}` : issue.message;
}

// Compile-time: what each schema accepts is usable as its interface from shapes.ts, so the two cannot drift.
type Fits<A extends B, B> = [A, B];
export type ResponseSchemasFitShapes = [
  Fits<z.infer<typeof fileDataSchema>, FileData>,
  Fits<z.infer<typeof uploadSessionSchema>, UploadSession>,
  Fits<z.infer<typeof startTaskResultSchema>, StartTaskResult>,
  Fits<z.infer<typeof completeMultipartUploadResultSchema>, CompleteMultipartUploadResult>,
  Fits<z.infer<typeof taskStatusDataSchema>, TaskStatusData>,
];
