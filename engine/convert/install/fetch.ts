/**
 * Downloads catalog models: undici with a short connect timeout (offline must fail in seconds, one
 * line per model), progress callbacks, resume of a cut download with an HTTP Range request from a
 * .part file, sha256 verification when the catalog knows the hash (a mismatch deletes the file and
 * installs nothing), conversion of .pth/.safetensors to ONNX, then a smoke-tested atomic install.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { Agent, interceptors, request, type Dispatcher } from 'undici';
import { convertBytes, type ConvertOptions } from '../convert.js';
import { installModel, type InstalledModel, type SmokeRunner } from './installModel.js';
import { CrispError } from '../../contract/errorCatalog.js';

export type DownloadFormat = 'onnx' | 'pth' | 'safetensors' | 'zip';

export interface DownloadSpec {
  url: string;
  format: DownloadFormat;
  sha256: string | null;
  size: number | null;
}

/** What fetch needs from a catalog entry (engine/core/models/catalog.ts CatalogEntry satisfies it). */
export interface FetchTarget {
  name: string;
  /** Installed file name, e.g. "realesr-general-x4v3.onnx". */
  file: string;
  /** Expected upscale factor; the smoke test refuses a model that does something else. */
  scale?: number;
  download: DownloadSpec;
}

export type ProgressCallback = (received: number, total: number | null) => void;

export interface DownloadOptions {
  onProgress?: ProgressCallback;
  /** TCP/TLS connect timeout (default 5000 ms): the bound on how long an offline fetch takes. */
  connectTimeoutMs?: number;
  /** Gap allowed between body chunks before the connection counts as cut (default 30 s). */
  bodyTimeoutMs?: number;
  /** Total tries, counting resumes after cut connections (default 5). */
  maxAttempts?: number;
  signal?: AbortSignal;
  /** Injected for tests or proxies; by default an Agent with the timeouts above and redirects. */
  dispatcher?: Dispatcher;
  expectedSize?: number | null;
}

export interface FetchOptions extends DownloadOptions, ConvertOptions {
  modelsDir: string;
  /** Where .part files are kept between attempts (default modelsDir/.downloads). */
  downloadDir?: string;
  smokeRun?: SmokeRunner;
}

/** A catalog `download-failed` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class FetchError extends CrispError {
  override readonly name = 'FetchError';
  constructor(message: string) {
    super('download-failed', message);
  }
}

/** Errors that mean "no route to the server": retrying will not help, report at once. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function errCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

function host(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

export function describeNetworkError(e: unknown, url: string, connectTimeoutMs: number): string {
  const code = errCode(e);
  const h = host(url);
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `cannot reach ${h} (no connection within ${connectTimeoutMs / 1000} s; are you offline?)`;
    case 'ECONNREFUSED':
      return `cannot reach ${h} (connection refused)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve ${h} (no network or DNS)`;
    case 'ENETUNREACH':
    case 'EHOSTUNREACH':
      return `cannot reach ${h} (network unreachable; are you offline?)`;
    default:
      return `download from ${h} failed: ${(e as Error).message ?? String(e)}${code ? ` (${code})` : ''}`;
  }
}

function defaultDispatcher(opts: DownloadOptions): Dispatcher {
  return new Agent({
    connect: { timeout: opts.connectTimeoutMs ?? 5000 },
    headersTimeout: opts.bodyTimeoutMs ?? 30_000,
    bodyTimeout: opts.bodyTimeoutMs ?? 30_000,
  }).compose(interceptors.redirect({ maxRedirections: 5 }));
}

async function fileSize(p: string): Promise<number> {
  try {
    return (await stat(p)).size;
  } catch {
    return 0;
  }
}

/**
 * Downloads `url` into `partPath`, resuming from whatever the file already holds. Returns when the
 * file is complete. Cut connections are resumed up to maxAttempts; connect failures throw at once.
 */
export async function downloadToFile(url: string, partPath: string, opts: DownloadOptions = {}): Promise<number> {
  const ownDispatcher = opts.dispatcher ? null : defaultDispatcher(opts);
  const dispatcher = opts.dispatcher ?? ownDispatcher!;
  const maxAttempts = opts.maxAttempts ?? 5;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5000;
  await mkdir(path.dirname(partPath), { recursive: true });
  try {
    let lastError: unknown;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      let have = await fileSize(partPath);
      const headers: Record<string, string> = { 'user-agent': 'crisp-model-fetch' };
      if (have > 0) headers.range = `bytes=${have}-`;
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, { dispatcher, headers, signal: opts.signal });
      } catch (e) {
        const code = errCode(e);
        if (code && CONNECT_CODES.has(code)) throw new FetchError(describeNetworkError(e, url, connectTimeoutMs));
        if (opts.signal?.aborted) throw e;
        lastError = e;
        continue;
      }
      let total: number | null = opts.expectedSize ?? null;
      if (res.statusCode === 416 && have > 0) {
        // Asked for bytes past the end: the .part is already complete (or stale). Check its size.
        await res.body.dump();
        const cr = /\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''));
        if (cr && Number(cr[1]) === have) return have;
        await rm(partPath, { force: true });
        continue;
      }
      if (res.statusCode === 206) {
        const cr = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(String(res.headers['content-range'] ?? ''));
        if (!cr || Number(cr[1]) !== have) {
          // The server resumed from somewhere else: start over rather than splice wrong bytes.
          await res.body.dump();
          await rm(partPath, { force: true });
          continue;
        }
        if (cr[2] !== '*') total = Number(cr[2]);
      } else if (res.statusCode === 200) {
        // The server ignored Range (or there was none): the body is the whole file.
        if (have > 0) await truncate(partPath, 0);
        have = 0;
        const len = Number(res.headers['content-length']);
        if (Number.isFinite(len) && len > 0) total = len;
      } else {
        await res.body.dump();
        throw new FetchError(`download from ${host(url)} failed: HTTP ${res.statusCode}`);
      }
      let received = have;
      opts.onProgress?.(received, total);
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          received += chunk.length;
          opts.onProgress?.(received, total);
          cb(null, chunk);
        },
      });
      try {
        await pipeline(res.body, counter, createWriteStream(partPath, { flags: have > 0 ? 'a' : 'w' }));
      } catch (e) {
        if (opts.signal?.aborted) throw e;
        // A cut connection: what arrived is on disk; the next attempt asks for the rest.
        lastError = e;
        continue;
      }
      if (total !== null && received !== total) {
        lastError = new Error(`connection closed after ${received} of ${total} bytes`);
        if (received > total) await rm(partPath, { force: true });
        continue;
      }
      return received;
    }
    throw new FetchError(
      `download from ${host(url)} failed after ${maxAttempts} attempts: ${(lastError as Error)?.message ?? 'unknown error'}`,
    );
  } finally {
    await ownDispatcher?.close();
  }
}

export async function sha256File(p: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(createReadStream(p), h);
  return h.digest('hex');
}

function partPathFor(target: FetchTarget, dir: string): string {
  const tag = createHash('sha256').update(target.download.url).digest('hex').slice(0, 8);
  return path.join(dir, `${path.basename(target.file, '.onnx')}.${tag}.${target.download.format}.part`);
}

/** Downloads, verifies, converts and installs one model. Throws FetchError / ModelInstallError / converter errors. */
export async function fetchModel(target: FetchTarget, opts: FetchOptions): Promise<InstalledModel> {
  const dir = opts.downloadDir ?? path.join(opts.modelsDir, '.downloads');
  const part = partPathFor(target, dir);
  await downloadToFile(target.download.url, part, { ...opts, expectedSize: opts.expectedSize ?? target.download.size });
  const expected = target.download.sha256?.toLowerCase() ?? null;
  if (expected) {
    const actual = await sha256File(part);
    if (actual !== expected) {
      await rm(part, { force: true });
      throw new FetchError(
        `sha256 mismatch for ${target.name}: expected ${expected}, got ${actual}; the download was deleted and nothing was installed`,
      );
    }
  }
  const bytes = await readFile(part);
  let onnx: Uint8Array;
  try {
    const format = target.download.format;
    if (format === 'zip') throw new FetchError(`${target.name}: zip archives are not supported by fetch yet`);
    onnx = (await convertBytes(bytes, format, opts)).onnx;
  } catch (e) {
    // A complete download that will not convert is not worth resuming.
    await rm(part, { force: true });
    throw e;
  }
  const installed = await installModel(onnx, {
    modelsDir: opts.modelsDir,
    fileName: target.file,
    ...(target.scale !== undefined ? { expectedScale: target.scale } : {}),
    ...(opts.smokeRun ? { run: opts.smokeRun } : {}),
  });
  await rm(part, { force: true });
  return installed;
}

export type FetchOutcome =
  { name: string; ok: true; installed: InstalledModel } | { name: string; ok: false; error: string };

/**
 * Fetches several models one after another; never throws for a model's failure. Each failure is
 * one line (`error`), so the CLI can print exactly one line per model.
 */
export async function fetchModels(
  targets: readonly FetchTarget[],
  opts: FetchOptions & { onModelProgress?: (name: string, received: number, total: number | null) => void },
): Promise<FetchOutcome[]> {
  const out: FetchOutcome[] = [];
  const dispatcher = opts.dispatcher ?? defaultDispatcher(opts);
  try {
    for (const t of targets) {
      try {
        const installed = await fetchModel(t, {
          ...opts,
          dispatcher,
          onProgress: (r, total) => {
            opts.onProgress?.(r, total);
            opts.onModelProgress?.(t.name, r, total);
          },
        });
        out.push({ name: t.name, ok: true, installed });
      } catch (e) {
        out.push({ name: t.name, ok: false, error: ((e as Error).message ?? String(e)).split('\n')[0]! });
      }
    }
  } finally {
    if (!opts.dispatcher) await dispatcher.close();
  }
  return out;
}
