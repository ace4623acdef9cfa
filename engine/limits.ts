/** Engine limits: defaults chosen for a desktop machine and a small self-hosted server; all overridable. */
export interface EngineLimits {
  /** Largest input file accepted (direct part, upload or URL), in bytes. */
  maxFileSize: number;
  maxFilesPerTask: number;
  /** Largest decoded input, in pixels; checked from the header before any decoding. */
  maxInputPixels: number;
  /** Largest output, in pixels (an 8-bit RGB output buffer is 3 bytes a pixel). */
  maxOutputPixels: number;
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
  // 16384² — enough for a 2000×2000 image at ×8; the output buffer alone is then 768 MiB.
  maxOutputPixels: 16384 * 16384,
  uploadTtlMs: 1 * HOUR,
  fileTtlMs: 24 * HOUR,
  urlFetchTimeoutMs: 30_000,
  urlMaxRedirects: 5,
};

export function resolveLimits(overrides?: Partial<EngineLimits>): EngineLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(overrides ?? {})) {
    if (v !== undefined) (limits as Record<string, number>)[k] = v;
  }
  return limits;
}
