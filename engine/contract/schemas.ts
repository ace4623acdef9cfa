/**
 * Every body of the contract as a zod object: what clients send to the four endpoints (and the
 * get-account extension) and what the service answers. One declaration serves three readers:
 * - the engine validates requests with them (parseRequest.ts runs them and words a refusal in the contract's terms);
 * - the HTTP server serialises its 200 answers from their JSON Schema (engine/server/routes);
 * - the remote client parses every answer with them (app/remote), so a misbehaving service is a clear
 *   "unexpected response" error instead of an `undefined` deep inside the app.
 * The TypeScript types of shapes.ts are inferred from these objects, so the two cannot drift.
 */
import { z } from 'zod';
import {
  COMPRESSION_MAX,
  COMPRESSION_MIN,
  DEFAULT_COMPRESSION,
  DENOISE_MODEL,
  INPUT_MIME_TYPES,
  isCustomModelName,
  MODEL_NAMES,
  OUTPUT_FORMATS,
  SCALES,
  TASK_STATUSES,
} from './enums.js';
import type { CustomModelName, SaveImageAs, Scale, TaskModelName } from './enums.js';
import type { ErrorCode } from './errorCatalog.js';
import { sanitizeFileName } from './fileNames.js';

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

// ---- requests: what clients send, with the contract's checks -----------------------------------------------
// These are the only validation of the contract's requests: parseRequest.ts runs them and words the first
// issue. A refusal reads "<field> <what is wrong>": for ordinary issues the words come from requestFields()
// (parseRequest.ts); a `custom` issue below carries its own words after the field name ({value}: the value sent).
// `params: { whole: true }` marks one whose words are the whole detail, and `params: { code }` one that is
// another catalog row than bad-request.

/** What a `custom` issue of these schemas carries: its words are the contract's (see parseRequest.ts). */
export interface ContractIssueParams {
  contract: true;
  /** The words are the whole detail, not preceded by the field's name. */
  whole?: boolean;
  /** The catalog row of the refusal, when it is not bad-request. */
  code?: ErrorCode;
}
/** A refusal in the contract's words, as a zod issue (`{value}`: the value sent). */
function refuse(message: string, extra: Omit<ContractIssueParams, 'contract'> = {}) {
  return { code: 'custom' as const, message, params: { contract: true, ...extra } satisfies ContractIssueParams };
}

/** The JSON endpoints' sizes: fileSize may be any whole number to be refused as too large (1e18 too). */
export function getUploadUrlRequestSchemaFor(maxFileSize: number) {
  return z.object({
    fileSize: z
      .number()
      .refine(Number.isInteger)
      .superRefine((n, ctx) => {
        if (n > maxFileSize)
          ctx.addIssue(
            refuse(`fileSize ${n} exceeds the limit of ${maxFileSize} bytes`, { whole: true, code: 'too-large' }),
          );
      })
      .pipe(getUploadUrlRequestSchema.shape.fileSize.refine(Number.isSafeInteger)),
    fileType: getUploadUrlRequestSchema.shape.fileType,
    originalFileName: getUploadUrlRequestSchema.shape.originalFileName,
  });
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

/** taskId is "not marked required" in the spec; a status request without one cannot name a task. */
export const getTaskStatusRequestSchema = z.object({
  taskId: z
    .string()
    .trim()
    .min(1)
    .superRefine((id, ctx) => {
      if (id.length > MAX_TASK_ID_LENGTH) ctx.addIssue(refuse('', { code: 'task-not-found' }));
    }),
});
/** Longer ids name no task (ours are UUIDs); answered "Task not found" without a look-up. */
export const MAX_TASK_ID_LENGTH = 200;

// start-task's form fields arrive as strings over HTTP and as numbers or booleans in-process: both are accepted,
// nothing else. An empty form field (or a null in-process) is an absent one.

/** An integer written as digits (a form field), or a number (in-process). */
const intField = z.union([
  z.number(),
  z
    .string()
    .trim()
    .regex(/^-?\d+$/)
    .transform(Number),
]);
/** A decimal number as a form string ("0.5", ".5", "1"), or a number (in-process). */
const decimalField = z.union([
  z.number(),
  z
    .string()
    .trim()
    .regex(/^(\d+\.?\d*|\.\d+)$/)
    .transform(Number),
]);
const boolField = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1'),
]);

/** " 4", "4\n", "04" and "+4" are refused for how they are written, not for their number. */
const LOOSE_SCALE = /^\s*[1-8]\s*$|^0+[1-8]$|^\+[1-8]$/;
/** Exactly one digit 1–8 as a form string (no spaces, signs or leading zeros), or the number in-process. */
const scaleField = z
  .unknown()
  .superRefine((v, ctx) => {
    if (typeof v === 'string' && !/^[1-8]$/.test(v) && LOOSE_SCALE.test(v))
      ctx.addIssue(refuse('{value} must be written as one digit from 1 to 8, with no spaces, sign or leading zeros'));
  })
  .pipe(
    z
      .union([
        z.number(),
        z
          .string()
          .regex(/^[1-8]$/)
          .transform(Number),
      ])
      .pipe(scaleSchema),
  );

/** `jpeg` (any case) is `jpg`: the one place that spelling is accepted. */
const saveImageAsField = z
  .string()
  .transform((v) => v.toLowerCase())
  .transform((v) => (v === 'jpeg' ? 'jpg' : v))
  .pipe(saveImageAsSchema);

/**
 * Options of settings validation. The defaults are the contract's: only its 12 model names. A local engine that
 * offers imported models passes `extraModels` (see EngineOptions.customModelsDir).
 */
/** An image handed to start-task directly (the `file` part, or the `<index>.file` parts). */
export interface SourceFile {
  originalFileName: string;
  /** The bytes, or a local path the engine may read (in-process callers only). */
  data: Uint8Array | { path: string };
}

/** A reference to a completed upload, as sent in start-task's `files`. Only `path` is required. */
export type UploadedFileRef = Pick<z.infer<typeof fileDataSchema>, 'path'> & Partial<z.infer<typeof fileDataSchema>>;

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

export interface TaskSettingsOptions {
  /** extension: accepts a `custom:<name>` model name when this answers true. */
  extraModels?: (name: string) => boolean;
}

function modelField(extraModels: TaskSettingsOptions['extraModels']) {
  const contract = z.enum(MODEL_NAMES);
  if (!extraModels) return contract;
  return z
    .string()
    .superRefine((v, ctx) => {
      if (isCustomModelName(v) && !extraModels(v))
        ctx.addIssue(refuse('{value} is not an imported custom model (see "crisp models list")'));
    })
    .pipe(z.union([contract, z.custom<CustomModelName>((v) => isCustomModelName(v) && extraModels(v))]));
}

const emptyIsAbsent = (raw: unknown) =>
  raw && typeof raw === 'object' && !Array.isArray(raw)
    ? Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, v === '' || v === null ? undefined : v]))
    : raw;

/** start-task's settings fields: model, scale, saveImageAs, enhanceFace, compression and denoise. */
export function taskSettingsSchema(options: TaskSettingsOptions = {}) {
  return z.preprocess(
    emptyIsAbsent,
    z
      .object({
        model: modelField(options.extraModels),
        scale: scaleField,
        saveImageAs: saveImageAsField,
        enhanceFace: boolField.default(false),
        compression: intField
          .pipe(z.number().int().min(COMPRESSION_MIN).max(COMPRESSION_MAX))
          .default(DEFAULT_COMPRESSION),
        /** extension: denoise strength 0–1, four decimals like the blend cache (0.5 and 0.50000001 are one task). */
        denoise: decimalField
          .pipe(z.number().min(0).max(1))
          .transform((v) => Number(v.toFixed(4)))
          .optional(),
      })
      .superRefine((s, ctx) => {
        // Only service-lite-4x (realesr-general-x4v3) has a denoising twin to blend with: any other model is
        // refused rather than silently ignoring the strength.
        if (s.denoise !== undefined && s.model !== DENOISE_MODEL)
          ctx.addIssue({
            ...refuse(`is only available with model '${DENOISE_MODEL}' (the general photo model), not '${s.model}'`),
            path: ['denoise'],
          });
      })
      .transform(({ denoise, ...settings }): TaskSettings =>
        denoise === undefined ? settings : { ...settings, denoise },
      ),
  );
}

/** A JSON array in a form string, or an array in-process; not empty, at most `max` items of `item`. */
function listField<T extends z.ZodType>(item: T, what: string, max: number) {
  return z
    .unknown()
    .transform((v, ctx) => {
      if (typeof v !== 'string') return v;
      try {
        return JSON.parse(v) as unknown;
      } catch {
        ctx.addIssue(refuse('must be a JSON array'));
        return z.NEVER;
      }
    })
    .superRefine((list, ctx) => {
      if (!Array.isArray(list)) ctx.addIssue(refuse('must be an array'));
      else if (list.length === 0) ctx.addIssue(refuse('must not be empty'));
      else if (list.length > max)
        ctx.addIssue(refuse(`${list.length} ${what} in one task; the limit is ${max}`, { whole: true }));
    })
    .pipe(z.array(item));
}

/** An uploaded file, as sent in `files`: a FileData whose `path` came from complete-multipart-upload. */
const uploadedFileRefSchema = z
  .looseObject({ path: z.string().min(1).max(1024) })
  .transform((ref) => ref as UploadedFileRef);

/** An http(s) URL (the engine fetches it; other schemes are refused). */
const httpUrlSchema = z
  .string()
  .trim()
  .max(4096)
  .pipe(z.url({ protocol: /^https?$/ }))
  .transform((u) => new URL(u).toString());

const sourceFileSchema = z.custom<SourceFile>(
  (f) => typeof f === 'object' && f !== null && 'data' in f && 'originalFileName' in f,
);

/**
 * start-task's image: exactly one of `file` (what the transport collected from the `file` and `<index>.file`
 * parts), `files` (uploaded FileData) or `urls`, at most `maxFiles` of them.
 */
export function startTaskSourceSchema(maxFiles: number) {
  return z.preprocess(
    emptyIsAbsent,
    z
      .object({ file: z.array(z.unknown()).optional(), files: z.unknown(), urls: z.unknown() })
      .superRefine((s, ctx) => {
        const count = Number((s.file?.length ?? 0) > 0) + Number(s.files !== undefined) + Number(s.urls !== undefined);
        if (count === 0) ctx.addIssue(refuse('no image given: send exactly one of file, files or urls'));
        else if (count > 1) ctx.addIssue(refuse('send exactly one of file, files or urls, not several'));
        else if (s.file && s.file.length > maxFiles)
          ctx.addIssue(refuse(`${s.file.length} files in one task; the limit is ${maxFiles}`));
      })
      .transform((s): unknown => s)
      .pipe(
        z.object({
          file: z
            .array(
              sourceFileSchema.transform((f) => ({ ...f, originalFileName: sanitizeFileName(f.originalFileName) })),
            )
            .optional(),
          files: listField(uploadedFileRefSchema, 'files', maxFiles).optional(),
          urls: listField(httpUrlSchema, 'urls', maxFiles).optional(),
        }),
      )
      .transform((s): StartTaskSource => {
        if (s.files) return { source: 'files', files: s.files };
        if (s.urls) return { source: 'urls', urls: s.urls };
        return { source: 'file', file: s.file ?? [] };
      }),
  );
}
