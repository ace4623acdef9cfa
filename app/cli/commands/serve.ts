/**
 * `crisp serve`: the upscaling contract over HTTP (engine/server). Every limit is a flag so operators
 * never need to edit code; defaults are documented in docs/deploy.md.
 */
import os from 'node:os';
import path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { EXECUTION_PROVIDERS, type ExecutionProviderChoice } from '../../../engine/inference/index.js';
import { CliError } from '../cliError.js';
import { startServer } from '../../../engine/server/start.js';
import { FaceModelMissingError, resolveFaceModel } from '../../../engine/faces/faceModels.js';
import { modelSearchDirs } from '../../../engine/models/catalog.js';
import { DEFAULT_SERVER_LIMITS } from '../../../engine/server/options.js';
import { DEFAULT_LIMITS, type EngineLimits } from '../../../engine/limits.js';

export const DEFAULT_DATA_DIR = path.join(os.homedir(), '.crisp', 'server');

function positiveInt(value: string): number {
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

interface ServeFlags {
  host: string;
  port: number;
  data: string;
  db?: string;
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
  logLevel: string;
  faceModel?: string;
  faceStrength?: string;
  metricsToken?: string;
}

export function register(program: Command): void {
  program
    .command('serve')
    .description('Serve the upscaling API over HTTP (X-API-Key users: see "crisp users")')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', port, 8787)
    .option('--data <dir>', 'data directory (users, credits, tasks, uploads, outputs)', DEFAULT_DATA_DIR)
    .option('--db <url>', 'PostgreSQL URL for users and credits, shared by several server processes (default: $CRISP_DB_URL; none: accounts.json under --data)', process.env.CRISP_DB_URL)
    .option('--public-url <url>', 'base URL clients reach this server at (used in part URLs and download links)', publicUrl)
    .option('--allow-private-urls', 'let start-task urls reach loopback/private addresses (trusted networks only)')
    .option('--max-file-size <bytes>', 'largest input file', positiveInt, DEFAULT_LIMITS.maxFileSize)
    .option('--max-files-per-task <n>', 'most images in one task', positiveInt, DEFAULT_LIMITS.maxFilesPerTask)
    .option('--max-input-pixels <n>', 'largest input image in pixels', positiveInt, DEFAULT_LIMITS.maxInputPixels)
    .option('--max-output-pixels <n>', 'largest output image in pixels', positiveInt, DEFAULT_LIMITS.maxOutputPixels)
    .option('--stream-above <bytes>', 'outputs whose raster is larger stream their tiles to a temp file on disk', positiveInt, DEFAULT_LIMITS.streamAboveBytes)
    .option('--disk-reserve <bytes>', 'free disk kept untouched; tasks that would eat into it are refused (400)', positiveInt, DEFAULT_LIMITS.diskReserveBytes)
    .option('--body-limit <bytes>', 'largest JSON request body', positiveInt, DEFAULT_SERVER_LIMITS.bodyLimit)
    .option('--rate-limit <n>', 'requests per API key per window (429 beyond)', positiveInt, DEFAULT_SERVER_LIMITS.rateLimitMax)
    .option('--rate-window <ms>', 'rate-limit window in milliseconds', positiveInt, DEFAULT_SERVER_LIMITS.rateLimitWindowMs)
    .option('--models-dir <dir...>', 'where the ONNX models are (default: the standard model folders)')
    .addOption(new Option('--execution-provider <ep>', 'inference device').choices(EXECUTION_PROVIDERS).default('auto'))
    .option('--threads <n>', 'CPU threads for inference', positiveInt)
    .option('--log-level <level>', 'fatal, error, warn, info, debug', 'info')
    .option('--face-model <name>', 'enable enhanceFace with this face model (gfpgan-1.4, gfpgan-1.3 or custom:NAME); without it enhanceFace gets 400')
    .option('--face-strength <0-1>', 'with --face-model: share of the restored face in the blend', '1')
    .option('--metrics-token <token>', 'serve GET /metrics (Prometheus) to this Bearer token (default: $CRISP_METRICS_TOKEN; none: no /metrics)', process.env.CRISP_METRICS_TOKEN)
    .action(async (flags: ServeFlags) => {
      const faceStrength = Number(flags.faceStrength ?? '1');
      if (!Number.isFinite(faceStrength) || faceStrength < 0 || faceStrength > 1) throw new CliError('--face-strength must be a number from 0 to 1');
      const modelDirs = flags.modelsDir ? flags.modelsDir.map((d) => path.resolve(d)) : modelSearchDirs();
      if (flags.faceModel !== undefined) {
        // Refused before listening: a server that says it enhances faces must be able to.
        try {
          resolveFaceModel(flags.faceModel, modelDirs);
        } catch (e) {
          if (e instanceof FaceModelMissingError) throw new CliError(e.message);
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
      };
      const server = await startServer({
        host: flags.host,
        port: flags.port,
        dataDir: flags.data,
        ...(flags.db ? { db: flags.db } : {}),
        ...(flags.publicUrl ? { publicUrl: flags.publicUrl } : {}),
        allowPrivateUrls: flags.allowPrivateUrls ?? false,
        engineLimits,
        serverLimits: { bodyLimit: flags.bodyLimit, rateLimitMax: flags.rateLimit, rateLimitWindowMs: flags.rateWindow },
        ...(flags.modelsDir ? { modelDirs: flags.modelsDir.map((d) => path.resolve(d)) } : {}),
        executionProvider: flags.executionProvider,
        ...(flags.threads ? { threads: flags.threads } : {}),
        logLevel: flags.logLevel,
        ...(flags.faceModel !== undefined ? { faces: { model: flags.faceModel, strength: faceStrength } } : {}),
        ...(flags.metricsToken ? { metricsToken: flags.metricsToken } : {}),
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
