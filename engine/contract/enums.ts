/**
 * The contract's enumerations (spec: "Resources and their fields → Enumerations").
 * Every other module imports these; none re-declares a model name, a scale or a format.
 */

export const MODEL_NAMES = [
  'service-standard-4x',
  'service-lite-4x',
  'clear-boost-4x',
  'crystal-plus-4x',
  'digital-art-4x',
  'digital-art-plus-4x',
  'natural-max-4x',
  'natural-plus-4x',
  'nature-boost-4x',
  'pure-boost-4x',
  'quick-clear-4x',
  'texture-boost-4x',
] as const;
export type ModelName = (typeof MODEL_NAMES)[number];

/**
 * extension: a user-imported model, `custom:<name>`. Only an engine given a custom models registry accepts
 * these (local mode); by default, and always over HTTP, the contract's 12 names are the only valid ones.
 */
export const CUSTOM_MODEL_PREFIX = 'custom:';
export type CustomModelName = `custom:${string}`;
/** What a task's `model` may hold: a contract name, or (local mode only) a custom one. */
export type TaskModelName = ModelName | CustomModelName;

/** extension: `denoise` (0–1) blends realesr-general-x4v3 with its wdn twin; only this model has one. */
export const DENOISE_MODEL: ModelName = 'service-lite-4x';

export const SCALES = [1, 2, 3, 4, 5, 6, 7, 8] as const;
export type Scale = (typeof SCALES)[number];

export const OUTPUT_FORMATS = ['jpg', 'png', 'webp'] as const;
export type SaveImageAs = (typeof OUTPUT_FORMATS)[number];

/** A task moves PROCESSING → ENHANCING → PROCESSED; any state may end in PROCESSING_FAILED. */
export const TASK_STATUSES = ['PROCESSING', 'ENHANCING', 'PROCESSED', 'PROCESSING_FAILED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Input MIME types accepted by start-task and get-upload-url. */
export const INPUT_MIME_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const;
export type InputMimeType = (typeof INPUT_MIME_TYPES)[number];

export const OUTPUT_MIME_TYPES: Readonly<Record<SaveImageAs, InputMimeType>> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
};

/** compression is an integer 0–100; 0 (the default) is best quality. */
export const COMPRESSION_MIN = 0;
export const COMPRESSION_MAX = 100;
export const DEFAULT_COMPRESSION = 0;

/** Largest side each output format can hold (WebP: 14-bit dimensions; JPEG: 16-bit). PNG's limit is 2^31−1. */
export const FORMAT_MAX_SIDE: Readonly<Record<SaveImageAs, number>> = {
  jpg: 65535,
  png: 2147483647,
  webp: 16383,
};

export function isModelName(value: unknown): value is ModelName {
  return typeof value === 'string' && (MODEL_NAMES as readonly string[]).includes(value);
}
export function isCustomModelName(value: unknown): value is CustomModelName {
  return (
    typeof value === 'string' && value.startsWith(CUSTOM_MODEL_PREFIX) && value.length > CUSTOM_MODEL_PREFIX.length
  );
}
