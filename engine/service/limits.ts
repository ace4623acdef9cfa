/** Engine limits: defaults chosen for a desktop machine and a small self-hosted server; all overridable. */
import { MAX_INPUT_PIXELS, MAX_OUTPUT_PIXELS } from '../core/pipeline/pixelLimits.js';

export interface EngineLimits {
  /** Largest input file accepted (direct part, upload or URL), in bytes. */
  maxFileSize: number;
  maxFilesPerTask: number;
  /**
   * Largest decoded input, in pixels; checked from the header before any decoding. By default the same as the
   * output limit: an input is accepted whenever its output fits (see pipeline/pixelLimits.ts).
   */
  maxInputPixels: number;
  /** Largest output, in pixels. Outputs above streamAboveBytes stream to a temp raster on disk (3 bytes a pixel for 8-bit RGB). */
  maxOutputPixels: number;
  /** Outputs whose raster is larger than this (bytes) stream their tiles to disk instead of memory. */
  streamAboveBytes: number;
  /** Free disk kept untouched on top of a job's temp raster and output; a job that would eat into it is refused. */
  diskReserveBytes: number;
  /** Lifetime of part URLs and unfinished uploads. */
  uploadTtlMs: number;
  /** Lifetime of completed uploads and of task outputs. */
  fileTtlMs: number;
  urlFetchTimeoutMs: number;
  urlMaxRedirects: number;
  /** URL inputs of one user fetched at the same time (the rest wait; inference never waits on them). */
  urlFetchesPerUser: number;
  /**
   * Per-user bounds (`crisp serve` sets them, see SERVER_USER_LIMITS; in-process use has one user and
   * leaves them unbounded). Tasks fetching, waiting or running at once:
   */
  maxTasksPerUser: number;
  /** URL inputs a user may ask for per urlFetchBudgetWindowMs, fetched or failed alike. */
  urlFetchBudget: number;
  urlFetchBudgetWindowMs: number;
  /** Upload sessions started and not yet completed. */
  maxOpenUploadsPerUser: number;
  /** Bytes held for a user: declared sizes of unexpired uploads plus the sizes of unexpired task outputs. */
  maxStoredBytesPerUser: number;
  /** Output files a user's unexpired tasks hold (or will hold, counting running tasks' images). */
  maxOutputsPerUser: number;
}

const MiB = 1024 * 1024;
const HOUR = 3_600_000;

export const DEFAULT_LIMITS: EngineLimits = {
  maxFileSize: 100 * MiB,
  maxFilesPerTask: 50,
  // The pixel limits are the pipeline's (one source): see pipeline/pixelLimits.ts for why input = output limit.
  maxInputPixels: MAX_INPUT_PIXELS,
  maxOutputPixels: MAX_OUTPUT_PIXELS,
  streamAboveBytes: 64 * MiB,
  diskReserveBytes: 64 * MiB,
  uploadTtlMs: 1 * HOUR,
  fileTtlMs: 24 * HOUR,
  urlFetchTimeoutMs: 30_000,
  urlMaxRedirects: 5,
  urlFetchesPerUser: 4,
  maxTasksPerUser: Number.POSITIVE_INFINITY,
  urlFetchBudget: Number.POSITIVE_INFINITY,
  urlFetchBudgetWindowMs: HOUR,
  maxOpenUploadsPerUser: Number.POSITIVE_INFINITY,
  maxStoredBytesPerUser: Number.POSITIVE_INFINITY,
  maxOutputsPerUser: Number.POSITIVE_INFINITY,
};

/**
 * The size limits of large jobs can also come from the environment, so the desktop app and `crisp upscale`
 * (which have no limit flags) are configurable too: CRISP_MAX_OUTPUT_PIXELS, CRISP_STREAM_ABOVE_BYTES,
 * CRISP_DISK_RESERVE_BYTES (positive integers; anything else is ignored). Explicit overrides win.
 */
export function limitsFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<EngineLimits> {
  const out: Partial<EngineLimits> = {};
  const read = (name: string): number | undefined => {
    const v = env[name];
    return v !== undefined && /^\d+$/.test(v) && Number(v) > 0 ? Number(v) : undefined;
  };
  const maxOutputPixels = read('CRISP_MAX_OUTPUT_PIXELS');
  const streamAboveBytes = read('CRISP_STREAM_ABOVE_BYTES');
  const diskReserveBytes = read('CRISP_DISK_RESERVE_BYTES');
  if (maxOutputPixels !== undefined) out.maxOutputPixels = maxOutputPixels;
  if (streamAboveBytes !== undefined) out.streamAboveBytes = streamAboveBytes;
  if (diskReserveBytes !== undefined) out.diskReserveBytes = diskReserveBytes;
  return out;
}
/** What `crisp serve` bounds per user unless its flags say otherwise (docs/deploy.md#resource-limits). */
export const SERVER_USER_LIMITS = {
  urlFetchesPerUser: 2,
  maxTasksPerUser: 8,
  urlFetchBudget: 200,
  urlFetchBudgetWindowMs: HOUR,
  maxOpenUploadsPerUser: 10,
  maxStoredBytesPerUser: 4 * 1024 * MiB,
  maxOutputsPerUser: 1000,
} as const satisfies Partial<EngineLimits>;

export function resolveLimits(overrides?: Partial<EngineLimits>): EngineLimits {
  const limits = { ...DEFAULT_LIMITS, ...limitsFromEnv() };
  for (const [k, v] of Object.entries(overrides ?? {})) {
    if (v !== undefined) (limits as Record<string, number>)[k] = v;
  }
  return limits;
}
