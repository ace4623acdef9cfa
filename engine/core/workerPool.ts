/**
 * The core's pool of worker threads. Every job runs whole in one worker thread — model resolution,
 * decode, tile pre/post-processing, inference, stitching, faces, encode — so the caller's event loop only
 * passes messages: a server keeps answering and a lease keeps beating however heavy the image.
 *
 * - Size: `workers` threads (default 1: one device, one image at a time, as the task runner schedules);
 *   the thread setting is the CPU budget of the whole pool, split evenly between its workers' onnxruntime
 *   sessions (docs/architecture.md).
 * - Overlap: once a worker's job is past its last model run (it says 'encoding'), the worker takes the next
 *   job, whose decode and inference then run while the first one's encode and write go on in libvips's
 *   threads. At most two jobs per worker; onnxruntime's run holds the worker's thread, so one model run at a
 *   time.
 * - Turns: a job of another key (job.turnKey: the service's user) also joins a worker whose one job is still
 *   in inference; their tiles' model runs then alternate (tileTurns.ts), so a giant image holds the thread
 *   for one tile at a time, not for its whole run.
 * - Workers start on warm() or the first job (an API-only process starts none), keep their sessions for
 *   later jobs, and do not keep the process alive while idle.
 * - Progress and cancellation cross by message (progress is ticked through each model run here, on the
 *   caller's thread, since the run holds the worker's: progressTicker.ts); a cancelled job's promise settles only once its worker has
 *   stopped and removed its temp files, so nothing half-written is left when it rejects.
 * - A worker that dies (out of memory, an uncaught native error) fails its job with a clear message and
 *   is replaced on the next job.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import { fromWire } from './errorWire.js';
import type { UpscaleFileJob, UpscaleFileOptions, UpscaleFileResult } from './job.js';
import type { CoreWorkerSetup, FromCoreWorker, ToCoreWorker } from './protocol.js';
import { progressTicker, type ProgressTicker } from './progressTicker.js';

interface Pending {
  id: number;
  job: UpscaleFileJob;
  signal: AbortSignal | undefined;
  /** The caller's onProgress, ticked through each model run on this thread (progressTicker.ts). */
  progress: ProgressTicker | undefined;
  onEncoding: (() => void) | undefined;
  resolve: (r: UpscaleFileResult) => void;
  reject: (e: unknown) => void;
  onAbort?: () => void;
}

interface Slot {
  worker: Worker;
  /** At most two: one job anywhere in the pipeline, and before it one that is only encoding. */
  jobs: Pending[];
  /** Ids of this slot's jobs that are past inference. */
  encoding: Set<number>;
  dead: boolean;
}

/** The compiled worker beside this module (built CLI: out/cli; desktop build: its chunks' parent), else the sources. */
export function defaultWorkerEntry(): { file: string; tsEntry?: string } {
  if (import.meta.url.endsWith('.ts')) {
    return {
      file: fileURLToPath(new URL('./tsWorker.mjs', import.meta.url)),
      tsEntry: new URL('./coreWorker.ts', import.meta.url).href,
    };
  }
  for (const rel of ['./coreWorker.js', '../coreWorker.js']) {
    const file = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(file)) return { file };
  }
  throw new Error('The core worker (coreWorker.js) is missing from this build.');
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly setup: CoreWorkerSetup,
    private readonly entry: () => { file: string; tsEntry?: string } = defaultWorkerEntry,
  ) {}

  run(job: UpscaleFileJob, opts: UpscaleFileOptions = {}): Promise<UpscaleFileResult> {
    if (this.closed) return Promise.reject(new Error('the upscaling core is closed'));
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
    return new Promise<UpscaleFileResult>((resolve, reject) => {
      const p: Pending = {
        id: this.nextId++,
        job,
        signal: opts.signal,
        progress: opts.onProgress ? progressTicker(opts.onProgress) : undefined,
        onEncoding: opts.onEncoding,
        resolve,
        reject,
      };
      p.onAbort = () => {
        const i = this.waiting.indexOf(p);
        if (i >= 0) {
          // Not started: nothing to clean up.
          this.waiting.splice(i, 1);
          this.settle(p);
          reject(opts.signal?.reason);
          return;
        }
        // A stopped job's bar stands still from now on, whatever its worker still reports.
        p.progress?.stop();
        p.progress = undefined;
        const slot = this.slots.find((s) => s.jobs.includes(p));
        if (slot) this.post(slot, { type: 'cancel', id: p.id });
      };
      opts.signal?.addEventListener('abort', p.onAbort, { once: true });
      this.waiting.push(p);
      this.dispatch();
    });
  }

  /** Starts the pool's threads now (idle, not keeping the process alive), so the first job does not wait for them. */
  warm(): void {
    while (!this.closed && this.slots.filter((s) => !s.dead).length < this.size) this.spawn();
  }

  /** Stops every worker (their sessions go with them); running jobs fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.waiting.splice(0)) {
      this.settle(p);
      p.reject(new Error('the upscaling core was closed before this image ran'));
    }
    await Promise.all(this.slots.map((s) => s.worker.terminate().catch(() => undefined)));
    this.slots.length = 0;
  }

  private settle(p: Pending): void {
    p.progress?.stop();
    if (p.onAbort) p.signal?.removeEventListener('abort', p.onAbort);
  }

  private post(slot: Slot, msg: ToCoreWorker): void {
    if (!slot.dead) slot.worker.postMessage(msg);
  }

  private dispatch(): void {
    for (let i = 0; i < this.waiting.length;) {
      const p = this.waiting[i]!;
      const slot = this.slotFor(p);
      if (!slot) {
        // Another waiting job (another caller's) may still fit beside a running one.
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      slot.jobs.push(p);
      slot.worker.ref();
      this.post(slot, { type: 'run', id: p.id, job: p.job });
    }
  }

  /**
   * A worker for `p`: an idle one (started if the pool has room), else one holding a single job that is only
   * encoding, or whose tiles take turns with p's (another key: tileTurns.ts). Never more than two jobs a worker,
   * so memory holds at most one image beyond the one being inferred.
   */
  private slotFor(p: Pending): Slot | undefined {
    const live = this.slots.filter((s) => !s.dead);
    const idle = live.find((s) => s.jobs.length === 0);
    if (idle) return idle;
    if (live.length < this.size) return this.spawn();
    const key = p.job.turnKey ?? '';
    return live.find(
      (s) => s.jobs.length === 1 && (s.encoding.has(s.jobs[0]!.id) || (s.jobs[0]!.job.turnKey ?? '') !== key),
    );
  }

  private spawn(): Slot {
    const entry = this.entry();
    const worker = new Worker(entry.file, {
      // One environment with this thread: a setting changed after the pool started (the test gate) is seen.
      env: SHARE_ENV,
      workerData: { ...this.setup, ...(entry.tsEntry ? { tsEntry: entry.tsEntry } : {}) },
    });
    const slot: Slot = { worker, jobs: [], encoding: new Set(), dead: false };
    this.slots.push(slot);
    worker.on('message', (msg: FromCoreWorker) => this.onMessage(slot, msg));
    const died = (why: string) => {
      if (slot.dead) return;
      slot.dead = true;
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      for (const p of slot.jobs.splice(0)) {
        this.settle(p);
        p.reject(
          p.signal?.aborted
            ? p.signal.reason
            : new Error(`The upscaling worker stopped while upscaling ${p.job.inputName} (${why}).`),
        );
      }
      if (!this.closed) this.dispatch();
    };
    worker.on('error', (e) => died(e.message.split('\n')[0] ?? 'error'));
    worker.on('exit', (code) => died(`exit code ${code}`));
    worker.unref();
    return slot;
  }

  private onMessage(slot: Slot, msg: FromCoreWorker): void {
    if (msg.type === 'released') return;
    const p = slot.jobs.find((j) => j.id === msg.id);
    if (!p) return;
    if (msg.type === 'progress') {
      p.progress?.report(msg.fraction, msg.etaSeconds, msg.step);
      return;
    }
    if (msg.type === 'encoding') {
      slot.encoding.add(p.id);
      this.dispatch();
      p.onEncoding?.();
      return;
    }
    slot.jobs.splice(slot.jobs.indexOf(p), 1);
    slot.encoding.delete(p.id);
    if (slot.jobs.length === 0) slot.worker.unref();
    this.settle(p);
    if (msg.type === 'done') p.resolve(msg.result);
    // A cancelled job rejects with the caller's own reason (what it aborted with), not the worker's wording.
    else p.reject(p.signal?.aborted ? p.signal.reason : fromWire(msg.error));
    this.dispatch();
  }
}
