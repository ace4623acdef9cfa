/** Engine limits: defaults chosen for a desktop machine and a small self-hosted server; all overridable. */
export interface EngineLimits {
  /** Largest input file accepted (direct part, upload or URL), in bytes. */
  maxFileSize: number;
  maxFilesPerTask: number;
  /** Largest decoded input, in pixels; checked from the header before any decoding. */
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
}

const MiB = 1024 * 1024;
const HOUR = 3_600_000;

export const DEFAULT_LIMITS: EngineLimits = {
  maxFileSize: 100 * MiB,
  maxFilesPerTask: 50,
  maxInputPixels: 40_000_000,
  // 2^30 (32768², 1.07 gigapixels): a 8192² image at ×4. Large outputs stream to disk, so memory stays
  // under 1 GB; the temp raster needs 3 bytes a pixel (3.2 GB at the limit for 8-bit RGB).
  maxOutputPixels: 2 ** 30,
  streamAboveBytes: 64 * MiB,
  diskReserveBytes: 64 * MiB,
  uploadTtlMs: 1 * HOUR,
  fileTtlMs: 24 * HOUR,
  urlFetchTimeoutMs: 30_000,
  urlMaxRedirects: 5,
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

export function resolveLimits(overrides?: Partial<EngineLimits>): EngineLimits {
  const limits = { ...DEFAULT_LIMITS, ...limitsFromEnv() };
  for (const [k, v] of Object.entries(overrides ?? {})) {
    if (v !== undefined) (limits as Record<string, number>)[k] = v;
  }
  return limits;
}
