/**
 * `crisp serve`: the upscaling contract over HTTP (engine/server). Every limit is a flag so operators
 * never need to edit code; defaults are documented in docs/deploy.md.
 */
import { usageError } from '../cliError.js';
import os from 'node:os';
import path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  EXECUTION_PROVIDERS,
  FaceModelMissingError,
  modelSearchDirs,
  resolveFaceModel,
  type ExecutionProviderChoice,
} from '../../../engine/core/index.js';
import {
  DEFAULT_SERVER_LIMITS,
  loadServer,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevel,
} from '../../../engine/server/index.js';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_LIMITS,
  FolderInUseError,
  SERVER_USER_LIMITS,
  type EngineLimits,
} from '../../../engine/service/index.js';
import { addStorageOptions, resolveStorage, type StorageFlags } from '../storageFlags.js';

export const DEFAULT_DATA_DIR = path.join(os.homedir(), '.crisp', 'server');

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError('expected 0 or a positive integer');
  return n;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number 0–65535');
  return n;
}

function publicUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http(s) URL such as https://upscale.example.com');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError('expected an http(s) URL');
  if (u.search || u.hash) throw new InvalidArgumentError('the public URL takes no query or fragment');
  return u.toString().replace(/\/$/, '');
}

interface ServeFlags extends StorageFlags {
  host: string;
  port: number;
  data: string;
  db?: string;
  workers: number;
  lease: number;
  publicUrl?: string;
  allowPrivateUrls?: boolean;
  maxFileSize: number;
  maxFilesPerTask: number;
  maxInputPixels: number;
  maxOutputPixels: number;
  streamAbove: number;
  diskReserve: number;
  bodyLimit: number;
  rateLimit: number;
  rateWindow: number;
  modelsDir?: string[];
  executionProvider: ExecutionProviderChoice;
  threads?: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  maxRequestBytes: number;
  requestTimeout: number;
  headersTimeout: number;
  keepAliveTimeout: number;
  pressureKeepAlive: number;
  bodyTimeout: number;
  bodyMinRate: number;
  connectionTimeout: number;
  maxConnections: number;
  maxConnectionsPerIp: number;
  maxTasksPerUser: number;
  urlFetchesPerUser: number;
  urlFetchBudget: number;
  urlFetchTimeout: number;
  maxOpenUploads: number;
  maxStoredBytes: number;
  maxOutputs: number;
  ledgerRetentionDays: number;
  metricsToken?: string;
  faceModel?: string;
  faceStrength?: string;
}

export function register(program: Command): void {
  addStorageOptions(
    program.command('serve').description('Serve the upscaling API over HTTP (X-API-Key users: see "crisp users")'),
    'where tasks, uploads and outputs live: a directory every API and worker process mounts (e.g. NFS), or s3://bucket/prefix (needs --db) (default: --data)',
  )
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', port, 8787)
    .option('--data <dir>', 'data directory (users, credits, tasks, uploads, outputs)', DEFAULT_DATA_DIR)
    .option(
      '--db <url>',
      'PostgreSQL URL for users and credits, shared by several server processes (default: $CRISP_DB_URL; none: accounts.json under --data)',
      process.env.CRISP_DB_URL,
    )
    .option(
      '--workers <n>',
      'with --db: tasks this process claims from the queue and runs at once (0: API only, "crisp worker" processes run them)',
      nonNegativeInt,
      1,
    )
    .option(
      '--lease <ms>',
      'with --db: a task whose worker died is run again by another after this long',
      positiveInt,
      DEFAULT_LEASE_MS,
    )
    .option(
      '--public-url <url>',
      'base URL clients reach this server at (used in part URLs and download links)',
      publicUrl,
    )
    .option('--allow-private-urls', 'let start-task urls reach loopback/private addresses (trusted networks only)')
    .option('--max-file-size <bytes>', 'largest input file', positiveInt, DEFAULT_LIMITS.maxFileSize)
    .option('--max-files-per-task <n>', 'most images in one task', positiveInt, DEFAULT_LIMITS.maxFilesPerTask)
    .option('--max-input-pixels <n>', 'largest input image in pixels', positiveInt, DEFAULT_LIMITS.maxInputPixels)
    .option('--max-output-pixels <n>', 'largest output image in pixels', positiveInt, DEFAULT_LIMITS.maxOutputPixels)
    .option(
      '--stream-above <bytes>',
      'outputs whose raster is larger stream their tiles to a temp file on disk',
      positiveInt,
      DEFAULT_LIMITS.streamAboveBytes,
    )
    .option(
      '--disk-reserve <bytes>',
      'free disk kept untouched; tasks that would eat into it are refused (400)',
      positiveInt,
      DEFAULT_LIMITS.diskReserveBytes,
    )
    .option('--body-limit <bytes>', 'largest JSON request body', positiveInt, DEFAULT_SERVER_LIMITS.bodyLimit)
    .option(
      '--rate-limit <n>',
      'requests per API key per window (429 beyond)',
      positiveInt,
      DEFAULT_SERVER_LIMITS.rateLimitMax,
    )
    .option(
      '--rate-window <ms>',
      'rate-limit window in milliseconds',
      positiveInt,
      DEFAULT_SERVER_LIMITS.rateLimitWindowMs,
    )
    // Abuse bounds (docs/deploy.md#resource-limits): time, connections, and what one user may hold.
    .option(
      '--max-request-bytes <bytes>',
      'largest sum of file parts in one start-task',
      positiveInt,
      DEFAULT_SERVER_LIMITS.maxRequestBytes,
    )
    .option(
      '--request-timeout <ms>',
      'a whole request must arrive within this (408 beyond)',
      positiveInt,
      DEFAULT_SERVER_LIMITS.requestTimeoutMs,
    )
    .option(
      '--headers-timeout <ms>',
      'request headers must arrive within this',
      positiveInt,
      DEFAULT_SERVER_LIMITS.headersTimeoutMs,
    )
    .option(
      '--keep-alive-timeout <ms>',
      'idle keep-alive connections close after this',
      positiveInt,
      DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs,
    )
    .option(
      '--pressure-keep-alive <ms>',
      'idle keep-alive while over 3/4 of --max-connections are open',
      positiveInt,
      DEFAULT_SERVER_LIMITS.pressureKeepAliveMs,
    )
    .option(
      '--body-timeout <ms>',
      "a request body's first bytes must arrive within this",
      positiveInt,
      DEFAULT_SERVER_LIMITS.bodyTimeoutMs,
    )
    .option(
      '--body-min-rate <bytes/s>',
      'after --body-timeout, a body slower than this on average gets 408',
      positiveInt,
      DEFAULT_SERVER_LIMITS.bodyMinRate,
    )
    .option(
      '--connection-timeout <ms>',
      'sockets with no traffic close after this',
      positiveInt,
      DEFAULT_SERVER_LIMITS.connectionTimeoutMs,
    )
    .option('--max-connections <n>', 'open connections in all', positiveInt, DEFAULT_SERVER_LIMITS.maxConnections)
    .option(
      '--max-connections-per-ip <n>',
      'open connections from one IP address (its longest-idle one gives way to a new one)',
      positiveInt,
      DEFAULT_SERVER_LIMITS.maxConnectionsPerIp,
    )
    .option(
      '--max-tasks-per-user <n>',
      'tasks one user may have fetching, waiting or running',
      positiveInt,
      SERVER_USER_LIMITS.maxTasksPerUser,
    )
    .option(
      '--url-fetches-per-user <n>',
      'URL inputs of one user fetched at the same time',
      positiveInt,
      SERVER_USER_LIMITS.urlFetchesPerUser,
    )
    .option(
      '--url-fetch-budget <n>',
      'URL inputs one user may ask for per hour (failed ones count too)',
      positiveInt,
      SERVER_USER_LIMITS.urlFetchBudget,
    )
    .option('--url-fetch-timeout <ms>', 'deadline of each URL fetch', positiveInt, DEFAULT_LIMITS.urlFetchTimeoutMs)
    .option(
      '--max-open-uploads <n>',
      'unfinished upload sessions per user',
      positiveInt,
      SERVER_USER_LIMITS.maxOpenUploadsPerUser,
    )
    .option(
      '--max-stored-bytes <bytes>',
      'bytes of uploads and outputs one user may hold',
      positiveInt,
      SERVER_USER_LIMITS.maxStoredBytesPerUser,
    )
    .option(
      '--max-outputs <n>',
      "output files one user's unexpired tasks may hold",
      positiveInt,
      SERVER_USER_LIMITS.maxOutputsPerUser,
    )
    .option(
      '--ledger-retention-days <n>',
      'days an ended charge stays in accounts.json before moving to ledger-archive.jsonl',
      positiveInt,
      7,
    )
    .option('--models-dir <dir...>', 'where the ONNX models are (default: the standard model folders)')
    .addOption(new Option('--execution-provider <ep>', 'inference device').choices(EXECUTION_PROVIDERS).default('auto'))
    .option('--threads <n>', 'CPU threads for inference', positiveInt)
    .addOption(
      new Option('--log-level <level>', 'info: one line per request, successful status polls at debug only')
        .choices(LOG_LEVELS)
        .default('info'),
    )
    .addOption(
      new Option('--log-format <format>', 'json lines, or pretty human-readable lines')
        .choices(LOG_FORMATS)
        .default('json'),
    )
    .option(
      '--metrics-token <token>',
      'serve GET /metrics (Prometheus) to this Bearer token (default: $CRISP_METRICS_TOKEN; none: no /metrics)',
      process.env.CRISP_METRICS_TOKEN,
    )
    .option(
      '--face-model <name>',
      'enable enhanceFace with this face model (gfpgan-1.4, gfpgan-1.3 or custom:NAME); without it enhanceFace gets 400',
    )
    .option('--face-strength <0-1>', 'with --face-model: share of the restored face in the blend', '1')
    .action(async (flags: ServeFlags) => {
      if (!flags.db && (flags.workers !== 1 || flags.lease !== DEFAULT_LEASE_MS)) {
        throw usageError('--workers and --lease need --db (without a database this process runs every task itself)');
      }
      const storage = resolveStorage(flags, flags.db);
      const faceStrength = Number(flags.faceStrength ?? '1');
      if (!Number.isFinite(faceStrength) || faceStrength < 0 || faceStrength > 1)
        throw usageError('--face-strength must be a number from 0 to 1');
      if (flags.faceModel !== undefined) {
        // Refused before listening: a server that says it enhances faces must be able to.
        try {
          resolveFaceModel(
            flags.faceModel,
            flags.modelsDir ? flags.modelsDir.map((d) => path.resolve(d)) : modelSearchDirs(),
          );
        } catch (e) {
          if (e instanceof FaceModelMissingError) throw usageError(e.message);
          throw e;
        }
      }
      const engineLimits: Partial<EngineLimits> = {
        maxFileSize: flags.maxFileSize,
        maxFilesPerTask: flags.maxFilesPerTask,
        maxInputPixels: flags.maxInputPixels,
        maxOutputPixels: flags.maxOutputPixels,
        streamAboveBytes: flags.streamAbove,
        diskReserveBytes: flags.diskReserve,
        maxTasksPerUser: flags.maxTasksPerUser,
        urlFetchesPerUser: flags.urlFetchesPerUser,
        urlFetchBudget: flags.urlFetchBudget,
        urlFetchTimeoutMs: flags.urlFetchTimeout,
        maxOpenUploadsPerUser: flags.maxOpenUploads,
        maxStoredBytesPerUser: flags.maxStoredBytes,
        maxOutputsPerUser: flags.maxOutputs,
      };
      // Fastify and the engine load only for this command, so `crisp --help` stays fast.
      const { startServer, PortInUseError } = await loadServer();
      const server = await startServer({
        host: flags.host,
        port: flags.port,
        dataDir: flags.data,
        ...(flags.db ? { db: flags.db, workers: flags.workers, leaseMs: flags.lease } : {}),
        ...(storage.kind === 'dir'
          ? { storageDir: storage.dir }
          : storage.kind === 's3'
            ? { objects: storage.location }
            : {}),
        ...(flags.publicUrl ? { publicUrl: flags.publicUrl } : {}),
        allowPrivateUrls: flags.allowPrivateUrls ?? false,
        engineLimits,
        serverLimits: {
          bodyLimit: flags.bodyLimit,
          rateLimitMax: flags.rateLimit,
          rateLimitWindowMs: flags.rateWindow,
          maxRequestBytes: flags.maxRequestBytes,
          requestTimeoutMs: flags.requestTimeout,
          headersTimeoutMs: flags.headersTimeout,
          keepAliveTimeoutMs: flags.keepAliveTimeout,
          pressureKeepAliveMs: flags.pressureKeepAlive,
          bodyTimeoutMs: flags.bodyTimeout,
          bodyMinRate: flags.bodyMinRate,
          connectionTimeoutMs: flags.connectionTimeout,
          maxConnections: flags.maxConnections,
          maxConnectionsPerIp: flags.maxConnectionsPerIp,
        },
        ...(flags.modelsDir ? { modelDirs: flags.modelsDir.map((d) => path.resolve(d)) } : {}),
        executionProvider: flags.executionProvider,
        ...(flags.threads ? { threads: flags.threads } : {}),
        logLevel: flags.logLevel,
        logFormat: flags.logFormat,
        ledgerRetentionMs: flags.ledgerRetentionDays * 86_400_000,
        ...(flags.metricsToken ? { metricsToken: flags.metricsToken } : {}),
        ...(flags.faceModel !== undefined ? { face: { model: flags.faceModel, strength: faceStrength } } : {}),
      }).catch((e: unknown) => {
        // Refused before anything was opened: another process owns the data folder, or the port is taken.
        if (e instanceof FolderInUseError || e instanceof PortInUseError) throw usageError(e.message);
        throw e;
      });
      // A parent process (tests, supervisors) reads this line to learn the port when --port 0.
      process.stdout.write(`crisp serve: listening on ${server.url}\n`);
      const stop = (signal: string) => {
        server.app.log.info({ signal }, 'shutting down');
        void server.close().finally(() => process.exit(0));
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
}
