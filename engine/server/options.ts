/** Configuration of `crisp serve` (CLI flags map 1:1; see docs/deploy.md for defaults and reasons). */
import type { ExecutionProviderChoice } from '../inference/index.js';
import type { EngineLimits } from '../limits.js';

export interface ServerLimits {
  /** Largest JSON request body, in bytes (multipart start-task is bounded by file size × files instead). */
  bodyLimit: number;
  /** Requests per key (or per IP without a key) per rateLimitWindowMs; excess gets 429 + Retry-After. */
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** Lifetime of a download link (capped by the file's own expiry). */
  downloadLinkTtlMs: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  bodyLimit: 1024 * 1024,
  rateLimitMax: 600,
  rateLimitWindowMs: 60_000,
  downloadLinkTtlMs: 3_600_000,
};

export interface ServerConfig {
  host: string;
  /** 0 picks a free port. */
  port: number;
  dataDir: string;
  /** postgres:// URL for users and credits (several processes may share it); absent: accounts.json under dataDir. */
  db?: string;
  /** Origin clients use to reach this server (part URLs, download links); defaults to http://host:port. */
  publicUrl?: string;
  allowPrivateUrls: boolean;
  engineLimits?: Partial<EngineLimits>;
  serverLimits?: Partial<ServerLimits>;
  modelDirs?: string[];
  executionProvider?: ExecutionProviderChoice;
  /** CPU threads for inference. */
  threads?: number;
  logLevel?: string;
  /** Enables enhanceFace: the face model (catalog name or custom:N in modelDirs) and blend strength. */
  faces?: { model: string; strength?: number };
  /** Bearer token that unlocks GET /metrics; absent: no /metrics route. */
  metricsToken?: string;
  /** Where logs go (default stdout); tests capture them. */
  logStream?: NodeJS.WritableStream;
}
