/**
 * Runtime validation at the contract boundary. Every transport (in-process engine API, HTTP server,
 * CLI) passes its raw input through these functions, so a rule is written exactly once.
 * Failures throw ContractError with a message naming the field and the accepted values.
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
} from './enums.js';
import { errors, type ContractError } from './errors.js';
import {
  completeMultipartUploadRequestSchema,
  getTaskStatusRequestSchema,
  getUploadUrlRequestSchema,
} from './schemas.js';
import type {
  CompleteMultipartUploadRequest,
  GetTaskStatusRequest,
  GetUploadUrlRequest,
  SourceFile,
  StartTaskRequest,
  TaskSettings,
  UploadedFileRef,
} from './shapes.js';

const MAX_NAME_LENGTH = 255;

/** Form fields arrive as strings; in-process callers pass numbers. Accept both, nothing else. */
const intLike = z.union([
  z.number(),
  z
    .string()
    .trim()
    .regex(/^-?\d+$/)
    .transform(Number),
]);
const boolLike = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1'),
]);

function describe(values: readonly (string | number)[]): string {
  return values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ');
}

function showValue(v: unknown): string {
  // eslint-disable-next-line no-control-regex
  const quoted = (t: string) => (/[\u0000-\u001f]/.test(t) ? JSON.stringify(t) : `'${t}'`);
  const s = typeof v === 'string' ? quoted(v) : JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function fail(detail: string): ContractError {
  return errors.badRequest(detail);
}

/**
 * Options of settings validation. The defaults are the contract's: only its 12 model names. A local
 * engine that offers imported models passes `extraModels` (see EngineOptions.customModelsDir).
 */
export interface TaskSettingsOptions {
  /** extension: accepts a `custom:<name>` model name when this answers true. */
  extraModels?: (name: string) => boolean;
}

export function parseModel(value: unknown, options: TaskSettingsOptions = {}): TaskSettings['model'] {
  const custom = options.extraModels ? ' or an imported custom:<name> model' : '';
  if (value === undefined || value === '') throw fail(`model is required (one of ${describe(MODEL_NAMES)}${custom})`);
  const m = MODEL_NAMES.find((n) => n === value);
  if (m) return m;
  if (isCustomModelName(value) && options.extraModels?.(value)) return value;
  if (custom && isCustomModelName(value))
    throw fail(`model ${showValue(value)} is not an imported custom model (see "crisp models list")`);
  throw fail(`model ${showValue(value)} is not one of ${describe(MODEL_NAMES)}${custom}`);
}

/** Exactly one digit 1–8 as a form string (no spaces, signs or leading zeros), or the number in-process. */
const scaleLike = z.union([
  z.number().int(),
  z
    .string()
    .regex(/^[1-8]$/)
    .transform(Number),
]);

export function parseScale(value: unknown): TaskSettings['scale'] {
  if (value === undefined || value === '') throw fail('scale is required (an integer from 1 to 8)');
  const r = scaleLike.safeParse(value);
  const s = r.success ? SCALES.find((n) => n === r.data) : undefined;
  if (s !== undefined) return s;
  // Name the real reason: " 4", "4\n" and "04" are not refused for their number.
  if (typeof value === 'string' && /^\s*[1-8]\s*$|^0+[1-8]$|^\+[1-8]$/.test(value))
    throw fail(
      `scale ${showValue(value)} must be written as one digit from 1 to 8, with no spaces, sign or leading zeros`,
    );
  throw fail(`scale ${showValue(value)} is not an integer from 1 to 8`);
}

export function parseFormat(value: unknown): TaskSettings['saveImageAs'] {
  if (value === undefined || value === '') throw fail(`saveImageAs is required (one of ${describe(OUTPUT_FORMATS)})`);
  const lower = typeof value === 'string' ? value.toLowerCase() : value;
  const f = OUTPUT_FORMATS.find((n) => n === (lower === 'jpeg' ? 'jpg' : lower));
  if (!f) throw fail(`saveImageAs ${showValue(value)} is not one of ${describe(OUTPUT_FORMATS)}`);
  return f;
}

export function parseCompression(value: unknown): number {
  if (value === undefined || value === '') return DEFAULT_COMPRESSION;
  const r = intLike.safeParse(value);
  if (!r.success || r.data < COMPRESSION_MIN || r.data > COMPRESSION_MAX) {
    throw fail(`compression ${showValue(value)} is not an integer from ${COMPRESSION_MIN} to ${COMPRESSION_MAX}`);
  }
  return r.data;
}

export function parseEnhanceFace(value: unknown): boolean {
  if (value === undefined || value === '') return false;
  const r = boolLike.safeParse(value);
  if (!r.success) throw fail(`enhanceFace ${showValue(value)} is not true or false`);
  return r.data;
}

/** Decimal numbers as form strings ("0.5", ".5", "1") or as numbers in-process. */
const numberLike = z.union([
  z.number(),
  z
    .string()
    .trim()
    .regex(/^(\d+\.?\d*|\.\d+)$/)
    .transform(Number),
]);

/**
 * extension: denoise strength 0–1 (absent when not given). Only service-lite-4x (realesr-general-x4v3)
 * has a denoising twin to blend with, so any other model is refused rather than silently ignoring it.
 */
export function parseDenoise(value: unknown, model: TaskSettings['model']): number | undefined {
  if (value === undefined || value === '' || value === null) return undefined;
  const r = numberLike.safeParse(value);
  if (!r.success || !Number.isFinite(r.data) || r.data < 0 || r.data > 1) {
    throw fail(`denoise ${showValue(value)} is not a number from 0 to 1`);
  }
  if (model !== DENOISE_MODEL) {
    throw fail(
      `denoise is only available with model '${DENOISE_MODEL}' (the general photo model), not ${showValue(model)}`,
    );
  }
  // Four decimals, like the blend cache: 0.5 and 0.50000001 are the same model and the same task.
  return Number(r.data.toFixed(4));
}

export function parseTaskSettings(fields: Record<string, unknown>, options: TaskSettingsOptions = {}): TaskSettings {
  const model = parseModel(fields.model, options);
  const settings: TaskSettings = {
    model,
    scale: parseScale(fields.scale),
    saveImageAs: parseFormat(fields.saveImageAs),
    enhanceFace: parseEnhanceFace(fields.enhanceFace),
    compression: parseCompression(fields.compression),
  };
  const denoise = parseDenoise(fields.denoise, model);
  if (denoise !== undefined) settings.denoise = denoise;
  return settings;
}

/** A client-supplied file name is data, never a path: keep the base name, drop control characters. */
export function sanitizeFileName(name: unknown, fallback = 'image'): string {
  if (typeof name !== 'string') return fallback;
  const base = name.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = base
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, MAX_NAME_LENGTH);
  return clean === '' || clean === '.' || clean === '..' ? fallback : clean;
}

/** JSON arrays arrive as form-field strings over HTTP and as arrays in-process. */
function jsonArrayField(name: string, value: unknown): unknown[] {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      throw fail(`${name} must be a JSON array`);
    }
  }
  if (!Array.isArray(v)) throw fail(`${name} must be an array`);
  if (v.length === 0) throw fail(`${name} must not be empty`);
  return v;
}

const uploadedFileRef = z.looseObject({ path: z.string().min(1).max(1024) });
const urlString = z.string().trim().max(4096);

export interface StartTaskLimits {
  maxFilesPerTask: number;
}

/**
 * start-task: settings plus exactly one of `file` (direct parts, one or more), `files` (uploaded FileData)
 * or `urls`. `file` is what the transport collected from the `file` and `<index>.file` parts.
 */
export function parseStartTask(
  fields: Record<string, unknown>,
  file: SourceFile[] | undefined,
  limits: StartTaskLimits,
  options: TaskSettingsOptions = {},
): StartTaskRequest {
  const settings = parseTaskSettings(fields, options);
  const hasFile = file !== undefined && file.length > 0;
  const hasFiles = fields.files !== undefined && fields.files !== '';
  const hasUrls = fields.urls !== undefined && fields.urls !== '';
  const count = Number(hasFile) + Number(hasFiles) + Number(hasUrls);
  if (count === 0) throw fail('no image given: send exactly one of file, files or urls');
  if (count > 1) throw fail('send exactly one of file, files or urls, not several');

  const checkCount = (n: number, what: string) => {
    if (n > limits.maxFilesPerTask) throw fail(`${n} ${what} in one task; the limit is ${limits.maxFilesPerTask}`);
  };
  if (hasFile) {
    checkCount(file.length, 'files');
    return {
      ...settings,
      source: 'file',
      file: file.map((f) => ({ ...f, originalFileName: sanitizeFileName(f.originalFileName) })),
    };
  }
  if (hasFiles) {
    const items = jsonArrayField('files', fields.files);
    checkCount(items.length, 'files');
    const refs: UploadedFileRef[] = items.map((item, i) => {
      const r = uploadedFileRef.safeParse(item);
      if (!r.success) throw fail(`files[${i}] must be a FileData object with a path from complete-multipart-upload`);
      return r.data as UploadedFileRef;
    });
    return { ...settings, source: 'files', files: refs };
  }
  const items = jsonArrayField('urls', fields.urls);
  checkCount(items.length, 'urls');
  const urls = items.map((item, i) => {
    const r = urlString.safeParse(item);
    let parsed: URL | undefined;
    try {
      parsed = r.success ? new URL(r.data) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw fail(`urls[${i}] ${showValue(item)} is not an http(s) URL`);
    }
    return parsed.toString();
  });
  return { ...settings, source: 'urls', urls };
}

/** Unwraps the spec's `{ "data": … }` request envelope. */
export function unwrapData(body: unknown): Record<string, unknown> | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const data = (body as Record<string, unknown>).data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  return data as Record<string, unknown>;
}

export interface UploadLimits {
  maxFileSize: number;
}

export function parseGetUploadUrl(body: unknown, limits: UploadLimits): GetUploadUrlRequest {
  const data = unwrapData(body);
  if (!data) throw fail('the body must be {"data": {"fileSize", "fileType", "originalFileName"}}');
  // Field by field with the schema's own parts, so each failure names its field in the contract's words.
  const field = getUploadUrlRequestSchema.shape;
  if (data.fileSize === undefined || data.fileSize === null)
    throw fail('fileSize is required (the size of the file in bytes)');
  // Too large is the reason for any whole number over the limit, even one past 2^53 (e.g. 1e18).
  if (typeof data.fileSize === 'number' && Number.isInteger(data.fileSize) && data.fileSize > limits.maxFileSize) {
    throw errors.payloadTooLarge(`fileSize ${data.fileSize} exceeds the limit of ${limits.maxFileSize} bytes`);
  }
  const size = field.fileSize.safeParse(data.fileSize);
  if (!size.success || !Number.isSafeInteger(size.data))
    throw fail(`fileSize ${showValue(data.fileSize)} is not a positive integer`);
  const type = field.fileType.safeParse(data.fileType);
  if (!type.success) throw fail(`fileType ${showValue(data.fileType)} is not one of ${describe(INPUT_MIME_TYPES)}`);
  const name = field.originalFileName.safeParse(data.originalFileName);
  if (!name.success) throw fail('originalFileName is required');
  return { fileSize: size.data, fileType: type.data, originalFileName: sanitizeFileName(name.data) };
}

export function parseCompleteMultipartUpload(body: unknown): CompleteMultipartUploadRequest {
  const data = unwrapData(body);
  if (!data || data.uploadId === undefined || data.key === undefined || data.parts === undefined) {
    throw errors.missingParameters();
  }
  const r = completeMultipartUploadRequestSchema.safeParse(data);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw fail(`${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`);
  }
  return r.data;
}

export function parseGetTaskStatus(body: unknown): GetTaskStatusRequest {
  const r = getTaskStatusRequestSchema.safeParse(unwrapData(body) ?? {});
  // taskId is "not marked required" in the spec; a status request without one cannot name a task.
  if (!r.success) throw fail('taskId is required');
  if (r.data.taskId.length > 200) throw errors.taskNotFound();
  return r.data;
}
