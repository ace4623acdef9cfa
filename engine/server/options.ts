/** Configuration of `crisp serve` (CLI flags map 1:1; see docs/deploy.md for defaults and reasons). */
import type { FaceJob } from '../core/index.js';
import type { ExecutionProviderChoice } from '../core/inference/index.js';
import type { EngineLimits } from '../service/limits.js';
import type { S3Location } from '../service/storage/objectStore.js';
import type { LogFormat } from './logging.js';

export interface ServerLimits {
  /** Largest JSON request body, in bytes (multipart start-task is bounded by file size × files instead). */
  bodyLimit: number;
  /** Requests per key (or per IP without a key) per rateLimitWindowMs; excess gets 429 + Retry-After. */
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** Lifetime of a download link (capped by the file's own expiry). */
  downloadLinkTtlMs: number;
  /** Largest sum of file-part bytes in one start-task (larger batches go through get-upload-url). */
  maxRequestBytes: number;
  /** A request (headers and body) must arrive within this; slower ones get 408 and are closed. */
  requestTimeoutMs: number;
  /** The request headers must arrive within this. */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** The keep-alive while more than 3/4 of maxConnections are open (connectionLimits.ts). */
  pressureKeepAliveMs: number;
  /** A request body's first bytes must arrive within this (then see bodyMinRate). */
  bodyTimeoutMs: number;
  /** After bodyTimeoutMs a body must keep arriving at this many bytes per second on average, or it gets 408. */
  bodyMinRate: number;
  /** A socket with no traffic at all is closed after this. */
  connectionTimeoutMs: number;
  /** Open connections in all; a further one closes the connection idle longest, or is closed at once if none is idle. */
  maxConnections: number;
  /** Open connections from one IP address; a further one closes that address's connection idle longest, or is closed at once if none is idle. */
  maxConnectionsPerIp: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  bodyLimit: 1024 * 1024,
  rateLimitMax: 600,
  rateLimitWindowMs: 60_000,
  downloadLinkTtlMs: 3_600_000,
  maxRequestBytes: 256 * 1024 * 1024,
  // 5 minutes for a whole request: a 256 MiB start-task needs ~0.9 MB/s; slower clients use part uploads.
  requestTimeoutMs: 300_000,
  headersTimeoutMs: 10_000,
  // Longer than the 60 s idle timeout of common load balancers and clients' pools, so the server is not
  // the side that closes a connection a client is about to reuse (that race shows as ECONNRESET); idle
  // connections are bounded by the connection caps instead.
  keepAliveTimeoutMs: 72_000,
  // Idle connections also give way to new ones when every slot is taken; past 3/4 of the slots they
  // are not kept long either.
  pressureKeepAliveMs: 5_000,
  // mod_reqtimeout's defaults (body=20,MinRate=500): a 1 byte/s body is cut after about 20 s, while a
  // client on a 4 kbit/s link still gets its body through.
  bodyTimeoutMs: 20_000,
  bodyMinRate: 500,
  // Above the keep-alive timeout, which governs idle keep-alive sockets; this cuts stalls mid-request.
  connectionTimeoutMs: 120_000,
  maxConnections: 1024,
  maxConnectionsPerIp: 256,
};

export interface ServerConfig {
  host: string;
  /** 0 picks a free port. */
  port: number;
  dataDir: string;
  /** postgres:// URL for users and credits (several processes may share it); absent: accounts.json under dataDir. */
  db?: string;
  /**
   * Where tasks, uploads, outputs and the signing secret live (default dataDir). Several processes share one
   * (e.g. an NFS mount) so any API process serves what any worker wrote and verifies any process's links.
   */
  storageDir?: string;
  /** Instead of storageDir: uploads, task inputs and outputs in a bucket (needs db; the signing secret is kept there). */
  objects?: S3Location;
  /** With db: tasks this process claims and runs at once (default 1; 0: API only, `crisp worker`s run them). */
  workers?: number;
  /** With db: a task whose worker died is run again after this long (docs/deploy.md). */
  leaseMs?: number;
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
  /**
   * Enables enhanceFace: the face of every such task (core's FaceJob: the face model, a catalog name or
   * custom:N in modelDirs, and the blend strength).
   */
  face?: FaceJob;
  /** json (default): one JSON object a line; pretty: short human-readable lines. */
  logFormat?: LogFormat;
  /** Bearer token that unlocks GET /metrics; absent: no /metrics route. */
  metricsToken?: string;
  /** Where logs go (default stdout); tests capture them. */
  logStream?: NodeJS.WritableStream;
  /** How long settled and released charges stay in accounts.json before moving to the ledger archive. */
  ledgerRetentionMs?: number;
  /** The engine's clock (tests advance it to expire uploads and outputs). */
  now?: () => number;
}
