/**
 * The Cloud backend: the contract over HTTP against any base URL. Small inputs go as start-task's `file`
 * part; inputs above `multipartThreshold` go through the multipart upload flow. Status is polled with
 * backoff and jitter; the output is downloaded from its downloadLink, checked, and written atomically.
 */
import { open, stat } from 'node:fs/promises';
import { readFile } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import {
  parseProgress,
  type TaskStatusData,
  CrispError,
  crispError,
  hasErrorCode,
  isCrispError,
  isRetryable,
} from '../../engine/contract/index.js';
import { sniffImageType } from '../../engine/core/index.js';
import type { UpscaleBackend, UpscaleOutcome, UpscaleRequest, UpscaleSettings } from '../backends/backend.js';
import { estimateCredits } from '../credits/estimate.js';
import type { AccountView } from '../service/crispService.js';
import { backoffDelay, sleep, type BackoffPolicy } from './backoff.js';
import { createContractClient, type ContractClient, type StartTaskSource } from './contractClient.js';
import { uploadMultipart } from './multipartUpload.js';
import { checkOutput } from './outputCheck.js';
import { cloudScaleFor, resizeToTarget, uprightSize } from './outputResize.js';
import { writeFileAtomic } from '../../engine/service/index.js';

/**
 * Double upscale is refused rather than run as two tasks: the contract has no passes field, so the second
 * task would upload the first's (×4, often tens of megapixels) result, be priced by the service on that
 * size, and could hit its input limits only after the first was paid for. "Again" on a finished item does
 * the same thing in two visible, separately priced steps.
 */
export const CLOUD_PASSES_REFUSAL =
  'Double upscale (2 passes) runs only in Local mode: a service upscales each image once per task. Choose 1 pass, or use Again on the finished image to send its result once more.';

/** A chain (a restoration model before the upscaler) needs the local engine: the contract has one model per task. */
export const CLOUD_PRE_MODEL_REFUSAL =
  'A restoration model before the upscaler runs only in Local mode: a service runs one model per task. Choose no pre-model.';

export interface RemoteBackendOptions {
  baseUrl: string;
  apiKey: string;
  dispatcher?: Dispatcher;
  /** Inputs larger than this (bytes) use the multipart upload flow. */
  multipartThreshold: number;
  partConcurrency: number;
  partAttempts: number;
  retry: BackoffPolicy;
  poll: BackoffPolicy;
  /** Consecutive failed polls (network, 5xx) tolerated before the item fails. */
  pollAttempts: number;
  /** How often a 429 is waited out (Retry-After) before it becomes the item's error. */
  rateLimitRetries: number;
  /** Longest Retry-After honoured; a longer one fails the item at once. */
  maxRetryAfterMs: number;
  requestTimeoutMs: number;
}

export const DEFAULT_REMOTE_OPTIONS: Omit<RemoteBackendOptions, 'baseUrl' | 'apiKey'> = {
  multipartThreshold: 8 * 1024 * 1024,
  partConcurrency: 3,
  partAttempts: 5,
  retry: { initialMs: 300, maxMs: 5_000, factor: 2, jitter: 0.5 },
  poll: { initialMs: 250, maxMs: 2_000, factor: 1.5, jitter: 0.3 },
  pollAttempts: 6,
  rateLimitRetries: 2,
  maxRetryAfterMs: 30_000,
  requestTimeoutMs: 120_000,
};

/** Upload up to 10 %, processing to 95 %, download and check the rest. */
const UPLOAD_SHARE = 10;
const PROCESS_END = 95;

export interface RemoteBackend extends UpscaleBackend {
  readonly client: ContractClient;
}

/**
 * What start-task sends for these settings (contractClient.startTask): the identity of a task on the service.
 * Tokens saved before the one face vocabulary carry `enhanceFace` instead of `face`; both read the same, so an
 * interrupted task is resumed, never started (and paid) again, across that upgrade.
 */
function sentFields(settings: unknown): Record<string, unknown> {
  const s = (typeof settings === 'object' && settings !== null ? settings : {}) as Record<string, unknown>;
  const enhanceFace = typeof s.enhanceFace === 'boolean' ? s.enhanceFace : s.face !== undefined;
  return {
    model: s.model,
    scale: s.scale,
    saveImageAs: s.saveImageAs,
    enhanceFace,
    compression: s.compression,
    ...(s.denoise !== undefined ? { denoise: s.denoise } : {}),
  };
}

export function createRemoteBackend(
  options: Pick<RemoteBackendOptions, 'baseUrl' | 'apiKey'> & Partial<RemoteBackendOptions>,
): RemoteBackend {
  const opts: RemoteBackendOptions = { ...DEFAULT_REMOTE_OPTIONS, ...options };
  const client = createContractClient({
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    timeoutMs: opts.requestTimeoutMs,
    ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
  });

  /** Waits out 429s the server rejected before doing anything, so repeating the call is safe. */
  async function rateLimited<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!hasErrorCode(e, 'rate-limited') || attempt >= opts.rateLimitRetries) throw e;
        const wait = e.retryAfterMs ?? backoffDelay(opts.retry, attempt);
        if (wait > opts.maxRetryAfterMs) throw e;
        await sleep(wait, signal);
      }
    }
  }

  async function poll(
    taskId: string,
    signal: AbortSignal | undefined,
    report: (p: number) => void,
  ): Promise<TaskStatusData> {
    let failures = 0;
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw crispError('cancelled');
      let status: TaskStatusData | undefined;
      try {
        status = await rateLimited(() => client.getTaskStatus(taskId, signal), signal);
        failures = 0;
      } catch (e) {
        // Polling is idempotent, so a dropped connection or a passing 5xx costs only a later poll.
        // (A rate limit was already waited out by rateLimited().)
        if (!isRetryable(e) || hasErrorCode(e, 'rate-limited') || ++failures >= opts.pollAttempts) throw e;
      }
      if (status) {
        report(UPLOAD_SHARE + ((PROCESS_END - UPLOAD_SHARE) * parseProgress(status.progress)) / 100);
        if (status.status === 'PROCESSED' || status.status === 'PROCESSING_FAILED') return status;
      }
      await sleep(backoffDelay(opts.poll, attempt), signal);
    }
  }

  async function source(req: UpscaleRequest, report: (p: number) => void): Promise<StartTaskSource> {
    const size = (await stat(req.inputPath)).size;
    const head = new Uint8Array(16);
    const fh = await open(req.inputPath, 'r');
    try {
      await fh.read(head, 0, head.length, 0);
    } finally {
      await fh.close();
    }
    const mime = sniffImageType(head);
    if (!mime) throw crispError('not-an-image', { name: req.inputName });
    if (size <= opts.multipartThreshold) {
      return { kind: 'file', fileName: req.inputName, bytes: new Uint8Array(await readFile(req.inputPath)), mime };
    }
    const ref = await uploadMultipart(
      client,
      { path: req.inputPath, size, mime, originalFileName: req.inputName },
      {
        concurrency: opts.partConcurrency,
        partAttempts: opts.partAttempts,
        retry: opts.retry,
        onProgress: (done, total) => report((UPLOAD_SHARE * done) / total),
      },
      req.signal,
    );
    return { kind: 'files', files: [ref] };
  }

  /** Binds a task to this service and these settings, so a token never resumes the wrong work. */
  function resumeToken(taskId: string, settings: UpscaleSettings): string {
    return JSON.stringify({ baseUrl: opts.baseUrl, taskId, settings: sentFields(settings) });
  }

  function resumedTaskId(req: UpscaleRequest, settings: UpscaleSettings): string | undefined {
    if (!req.resume) return undefined;
    try {
      const t = JSON.parse(req.resume) as { baseUrl?: unknown; taskId?: unknown; settings?: unknown };
      const same =
        t.baseUrl === opts.baseUrl && JSON.stringify(sentFields(t.settings)) === JSON.stringify(sentFields(settings));
      return same && typeof t.taskId === 'string' ? t.taskId : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    mode: 'cloud',
    client,

    async upscale(req: UpscaleRequest): Promise<UpscaleOutcome> {
      const { signal } = req;
      let last = 0;
      const report = (p: number) => {
        const v = Math.min(100, Math.floor(p));
        if (v <= last) return;
        last = v;
        req.onProgress?.(v);
      };
      if (signal?.aborted) throw crispError('cancelled');
      let status: TaskStatusData | undefined;
      if (req.settings.passes === 2) throw new CrispError('bad-request', CLOUD_PASSES_REFUSAL);
      if (req.settings.preModel) throw new CrispError('bad-request', CLOUD_PRE_MODEL_REFUSAL);
      // An exact size: the smallest contract scale that reaches it is what the service runs (and prices).
      const sized = req.settings.size
        ? cloudScaleFor(await uprightSize(req.inputPath), req.settings.size, req.inputName)
        : undefined;
      const settings: UpscaleSettings = sized ? { ...req.settings, scale: sized.scale } : req.settings;
      const resumable = resumedTaskId(req, settings);
      if (resumable) {
        // The app stopped (or the item was cancelled) after the service accepted this image: the task
        // may have run, and been paid for, already. Follow it rather than start a second one.
        status = await poll(resumable, signal, report).catch((e: unknown) => {
          if (hasErrorCode(e, 'not-found')) return undefined; // expired or swept: start afresh
          throw e;
        });
      }
      if (!status) {
        const src = await source(req, report);
        const started = await rateLimited(() => client.startTask(settings, src, signal), signal);
        req.onResumable?.(resumeToken(started.taskId, settings));
        report(UPLOAD_SHARE);
        status = await poll(started.taskId, signal, report);
      }
      if (status.status === 'PROCESSING_FAILED') {
        throw new CrispError('processing-failed', status.error ?? 'The service could not upscale this image.');
      }
      const file = status.files[0];
      if (!file?.downloadLink)
        throw new CrispError('invalid-output', 'The service finished the task but offered no download link.');
      const { bytes } = await client.download(file.downloadLink, signal);
      report(98);
      if (signal?.aborted) throw crispError('cancelled');
      let dims = await checkOutput(bytes, file);
      let written = bytes;
      if (sized) {
        // One resample of the service's result to exactly the asked-for size, here, in the task's format.
        written = await resizeToTarget(bytes, sized.target, settings.saveImageAs, settings.compression);
        dims = sized.target;
      }
      if (signal?.aborted) throw crispError('cancelled');
      await writeFileAtomic(req.outputPath, written);
      report(100);
      return {
        outputPath: req.outputPath,
        dimensions: dims,
        fileSize: written.length,
        creditsDeducted: status.deductedCredits,
        warnings: status.warnings ?? [],
        // An extension Crisp's own server reports; other services leave it out.
        ...(file.faces ? { faces: { found: file.faces.found, enhanced: file.faces.enhanced } } : {}),
      };
    },

    async estimate(settings: UpscaleSettings, itemCount: number): Promise<number> {
      return estimateCredits('cloud', settings, itemCount).credits;
    },

    async getAccount(): Promise<AccountView> {
      try {
        const a = await client.getAccount();
        return {
          available: true,
          ...(a.email !== undefined ? { email: a.email } : {}),
          ...(typeof a.currentCredits === 'number' ? { currentCredits: a.currentCredits } : {}),
          ...(typeof a.currentExtraCredits === 'number' ? { currentExtraCredits: a.currentExtraCredits } : {}),
        };
      } catch (e) {
        // get-account is an extension: a service without it answers 404 (or 405); the balance is then not shown.
        if (hasErrorCode(e, 'not-found') || (isCrispError(e) && e.status === 405)) return { available: false };
        throw e;
      }
    },

    async faceEnhancement(): Promise<boolean | null> {
      try {
        return (await client.getCapabilities()).faceEnhancement;
      } catch {
        // An extension: missing (404/405), or the service is unreachable right now — not this question's error.
        return null;
      }
    },

    async offeredModels(): Promise<string[] | null> {
      try {
        return (await client.getCapabilities()).models ?? null;
      } catch {
        // As faceEnhancement: a missing extension or an unreachable service is not this question's error.
        return null;
      }
    },

    async close(): Promise<void> {},
  };
}
