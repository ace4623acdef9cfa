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
  maxInputPixels: 40_000_000,
  // 16384² — enough for a 2000×2000 image at ×8; the output buffer alone is then 768 MiB.
  maxOutputPixels: 16384 * 16384,
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
  const limits = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(overrides ?? {})) {
    if (v !== undefined) (limits as Record<string, number>)[k] = v;
  }
  return limits;
}
