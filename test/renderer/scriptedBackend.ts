/**
 * An UpscaleBackend whose work the test drives: `upscale` waits until the test moves it (`advance`), then
 * writes a real output file (atomically, like the real backends) or fails with the words a real backend
 * would use. It implements the backend interface, not the queue: the queue under test is the real one.
 * DOM-free (used by Node-side tests too).
 */
import { writeFile, rename } from 'node:fs/promises';
import { estimateCredits } from '../../app/credits/estimate.js';
import type { UpscaleBackend, UpscaleOutcome, UpscaleRequest } from '../../app/backends/backend.js';
import { CancelledError, InsufficientCreditsError } from '../../app/backends/errors.js';
import type { AccountView, Mode } from '../../app/service/crispService.js';

// 1×1 PNG: enough for <img> and for byte round-trips.
export const PNG_1x1 = Uint8Array.from(
  atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='),
  (c) => c.charCodeAt(0),
);

export interface ScriptOptions {
  /** Cloud balance before any work (default 10). */
  balance?: number;
  /** Inputs whose name matches fail with "not an image Crisp can read". */
  failNames?: RegExp;
  /** Local engine: the providers its runtime offers, best first (default: a CPU-only Linux build). */
  devices?: string[];
}

interface ActiveJob {
  request: UpscaleRequest;
  percent: number;
  mode: Mode;
  settle(outcome: UpscaleOutcome | Error): void;
}

export class ScriptedEngine {
  balance: number;
  private active: ActiveJob | undefined;
  private waiters: (() => void)[] = [];

  constructor(private readonly options: ScriptOptions = {}) {
    this.balance = options.balance ?? 10;
  }

  /** A backend view in one mode; all views share the engine's balance and its one active job. */
  backend(mode: Mode): UpscaleBackend {
    return {
      mode,
      upscale: (request) => this.accept(request, mode),
      estimate: async (settings, count) => estimateCredits(mode, settings, count).credits,
      getAccount: async (): Promise<AccountView> =>
        mode === 'cloud'
          ? { available: true, email: 'user@example.test', currentCredits: this.balance, currentExtraCredits: 0 }
          : { available: false },
      ...(mode === 'local' ? { devices: async () => this.devices() } : {}),
      close: async () => undefined,
    };
  }

  private devices(): string[] {
    return this.options.devices ?? ['cpu'];
  }

  private accept(request: UpscaleRequest, mode: Mode): Promise<UpscaleOutcome> {
    return new Promise<UpscaleOutcome>((resolve, reject) => {
      const price = estimateCredits(mode, request.settings, 1).credits;
      if (price > this.balance) {
        reject(
          new InsufficientCreditsError('Insufficient credits: this image needs more credits than the account has.'),
        );
        return;
      }
      const job: ActiveJob = {
        request,
        percent: 0,
        mode,
        settle: (outcome) => {
          this.active = undefined;
          request.signal?.removeEventListener('abort', onAbort);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        },
      };
      const onAbort = () => job.settle(new CancelledError());
      if (request.signal?.aborted) {
        reject(new CancelledError());
        return;
      }
      request.signal?.addEventListener('abort', onAbort, { once: true });
      this.active = job;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** The item the queue handed over, once it has (resolves undefined when `stillRunning` says the run ended). */
  async activeJob(stillRunning: () => Promise<boolean>): Promise<ActiveJob | undefined> {
    for (let i = 0; i < 2000; i++) {
      if (this.active) return this.active;
      if (!(await stillRunning())) return undefined;
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 5);
      });
    }
    throw new Error('the queue never handed an item to the backend');
  }

  /** Moves the active job forward; at 100 it writes the output (or fails, per failNames). */
  async advance(job: ActiveJob, percent: number): Promise<void> {
    job.percent = Math.min(100, job.percent + percent);
    if (job.percent < 100) {
      job.request.onProgress?.(job.percent);
      return;
    }
    const { request } = job;
    if (this.options.failNames?.test(request.inputName)) {
      job.settle(
        new Error(`${request.inputName} is not an image Crisp can read (the file is damaged or not JPG, PNG or WebP).`),
      );
      return;
    }
    request.onProgress?.(100);
    const temp = `${request.outputPath}.part`;
    await writeFile(temp, PNG_1x1);
    await rename(temp, request.outputPath);
    const credits = estimateCredits(job.mode, request.settings, 1).credits;
    this.balance -= credits;
    // With faces on, report what the engine would: here two faces found, one big enough to enhance.
    const faces = request.settings.face ? { faces: { found: 2, enhanced: 1 } } : {};
    job.settle({
      outputPath: request.outputPath,
      dimensions: { width: 1, height: 1 },
      fileSize: PNG_1x1.byteLength,
      creditsDeducted: credits,
      warnings: [],
      ...faces,
      // Locally the engine says what ran the model: Automatic's first choice, in fp32.
      ...(job.mode === 'local' ? { device: { provider: this.devices()[0] ?? 'cpu', precision: 'fp32' as const } } : {}),
    });
  }
}
