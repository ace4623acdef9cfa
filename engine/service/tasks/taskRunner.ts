/**
 * The task scheduler: one model run at a time (one device), shared fairly between users.
 *
 * - Each user has their own queue of runnable tasks; users are served round-robin **one image at a time**,
 *   and while one user's image runs, another user's image runs beside it with its tiles taking turns with
 *   the first one's (engine/core/tileTurns.ts), so another user waits at most one tile of a long image, not
 *   the whole image. At most two images are in flight; a user's next image starts beside their own only once
 *   that one's model work is done, overlapping its encode (pump).
 * - URL inputs are fetched before a task joins its user's queue, outside the inference loop: fetches
 *   run concurrently, at most `urlFetchesPerUser` at once per user, each with its own deadline, so a
 *   slow or failing host holds only its own task, never the device.
 * - Each image runs in engine/core's worker threads (`core.upscaleFile`): this class only schedules, keeps
 *   records and reports progress, so the process's event loop (the API, the lease heartbeat) stays free.
 *
 * Status: PROCESSING while fetching or queued; ENHANCING once its first image runs; PROCESSED when every
 * output is written; PROCESSING_FAILED on any error, cancel or shutdown. A failed batch keeps no
 * outputs: a task is delivered whole or not at all, and nothing is charged for it.
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { OUTPUT_MIME_TYPES, type FileData } from '../../contract/index.js';
import { imageJob } from '../../core/checkJob.js';
import type { Core, FaceJob } from '../../core/index.js';
import { checkedInput } from '../../core/inputs.js';
import { holdPoint } from '../../core/testGate.js';
import { fetchImage } from '../inputs/fetchImage.js';
import type { EngineLimits } from '../limits.js';
import { outputFileName } from './outputNames.js';
import type { TaskStore } from './taskStore.js';
import type { StoredTask } from './taskTypes.js';
import { userMessage } from './userMessage.js';
import { taskEtaSeconds } from './taskEta.js';

export interface TaskRunnerDeps {
  store: TaskStore;
  limits: EngineLimits;
  now: () => number;
  /** Runs each image off this event loop (engine/core); the runner only schedules and keeps records. */
  core: Core;
  /** Face model and strength for tasks with enhanceFace (the engine refuses those tasks when this is absent). */
  face?: FaceJob;
  tileSize: number | undefined;
  allowPrivateUrls: boolean;
  onFailed: (task: StoredTask) => Promise<void>;
  /** After a task's URL inputs are fetched and measured (re-price it); a throw fails the task. */
  onInputsFetched?: (task: StoredTask) => Promise<void>;
  /**
   * Queue mode: false once this process may no longer end the task (its lease was lost, or the worker is
   * shutting down and hands the job back). The runner then drops it without failing it, removing its
   * outputs or releasing its credits: another worker runs it again.
   */
  owns?: (task: StoredTask) => boolean;
  /** Called once when a task leaves the runner (finished, failed or dropped). */
  onEnded?: (task: StoredTask) => void;
  /** Queue mode: throws unless this process still holds the task (asked before each image and before publishing). */
  confirmOwnership?: (task: StoredTask) => Promise<void>;
  /** Object storage: brings the task's inputs to this process's disk before its first image runs. */
  stageInputs?: (task: StoredTask) => Promise<void>;
  /** Object storage: puts the outputs where every process can serve them, before the task becomes PROCESSED. */
  publishOutputs?: (task: StoredTask) => Promise<void>;
  /** The task's error sentence for a failure (default userMessage; a server hides its paths: publicMessage). */
  explain?: (e: unknown, fileName: string | undefined) => string;
}

class Cancelled extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A task the runner holds, from enqueue until it ends. */
interface Job {
  task: StoredTask;
  abort: AbortController;
  /** Index of the next image to upscale. */
  next: number;
  /** Set once its inputs are staged and its outputs folder exists (before its first image). */
  prepared?: boolean;
  taken: Set<string>;
  currentName?: string;
  /** Set while one of its images runs (cancel waits for it). */
  step?: Promise<void>;
}

export class TaskRunner {
  /** Every held task by id: fetching, queued or running. */
  private readonly jobs = new Map<string, Job>();
  /** Runnable jobs per user, in arrival order. */
  private readonly queues = new Map<string, Job[]>();
  /** Users with runnable jobs, in round-robin order. */
  private readonly turns: string[] = [];
  private readonly fetching = new Map<string, number>();
  private readonly fetchWaiters = new Map<string, (() => void)[]>();
  private idleWaiters: (() => void)[] = [];
  private pumping = false;
  /** Wakes the pump while it waits for an image (new work may start beside it). */
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(private readonly deps: TaskRunnerDeps) {}

  /** Tasks of this user that are fetching, waiting or running (the per-user cap counts these). */
  activeTasksOf(userId: string): number {
    let n = 0;
    for (const j of this.jobs.values()) if (j.task.userId === userId) n++;
    return n;
  }

  enqueue(task: StoredTask): void {
    if (this.closed) throw new Error('engine is closed');
    const job: Job = { task, abort: new AbortController(), next: 0, taken: new Set() };
    this.jobs.set(task.id, job);
    if (task.inputs.some((i) => i.url)) void this.prefetch(job);
    else this.makeRunnable(job);
  }

  async idle(): Promise<void> {
    while (this.jobs.size > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
  }

  async cancel(task: StoredTask, reason = 'Cancelled'): Promise<void> {
    const job = this.jobs.get(task.id);
    if (!job) return;
    job.abort.abort(new Cancelled(reason));
    if (job.step) {
      await job.step;
      return;
    }
    // Queued (not running): leave the queue now; fetching: prefetch sees the abort and fails the task.
    const q = this.queues.get(task.userId);
    const i = q?.indexOf(job) ?? -1;
    if (q && i >= 0) {
      q.splice(i, 1);
      if (q.length === 0) this.dropUser(task.userId);
      if (this.deps.owns?.(task) === false) return this.release(job);
      // Its earlier images may already have run (users take turns image by image).
      await this.removeOutputs(task);
      await this.finish(job, reason);
    } else {
      await this.ended(job);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of [...this.jobs.values()]) {
      const running = job.step !== undefined;
      await this.cancel(
        job.task,
        running
          ? 'Crisp was shut down while this task was running. Start it again.'
          : 'Crisp was shut down before this task ran. Start it again.',
      );
    }
    await this.idle();
  }

  /** Resolves once `job` has left the runner. */
  private ended(job: Job): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (this.jobs.has(job.task.id) ? this.idleWaiters.push(check) : resolve());
      check();
    });
  }

  private makeRunnable(job: Job): void {
    const userId = job.task.userId;
    let q = this.queues.get(userId);
    if (!q) {
      q = [];
      this.queues.set(userId, q);
      this.turns.push(userId);
    }
    q.push(job);
    this.wakePump();
    if (!this.pumping) {
      this.pumping = true;
      void this.pump().finally(() => {
        this.pumping = false;
      });
    }
  }

  private dropUser(userId: string): void {
    this.queues.delete(userId);
    const t = this.turns.indexOf(userId);
    if (t >= 0) this.turns.splice(t, 1);
  }

  /**
   * Turns, one image each, round-robin over users, at most two images in flight. A second image starts when
   * the first one's model work is done (core's onEncoding), so its decode and inference overlap that image's
   * encode, write and publish (issue 37); or at once when it is another user's, so one user's long image never
   * holds everyone else: core gives the two images' tiles turns (engine/core/tileTurns.ts, keyed by the user).
   * A job runs one image at a time, so the second image is always another task's.
   */
  private async pump(): Promise<void> {
    const inFlight: { userId: string; modelDone: boolean; over: Promise<void> }[] = [];
    for (;;) {
      const turn =
        inFlight.length < 2
          ? this.nextTurn((userId) => inFlight.every((r) => r.modelDone || r.userId !== userId))
          : undefined;
      if (turn) {
        const { userId, q, job } = turn;
        const running = { userId, modelDone: false, over: Promise.resolve() };
        const step = this.stepOf(job, () => {
          running.modelDone = true;
          this.wakePump();
        }).then(() => {
          job.step = undefined;
          inFlight.splice(inFlight.indexOf(running), 1);
          if (this.jobs.get(job.task.id) === job) return;
          const i = q.indexOf(job);
          if (i >= 0) q.splice(i, 1);
          if (q.length === 0 && this.queues.get(userId) === q) this.dropUser(userId);
        });
        running.over = step;
        job.step = step;
        inFlight.push(running);
        continue;
      }
      if (inFlight.length === 0) return;
      // Look again when an image's model work is done, an image ends, or new work arrives (makeRunnable).
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        for (const r of inFlight) void r.over.then(resolve);
      });
      this.wake = undefined;
    }
  }

  private wakePump(): void {
    this.wake?.();
  }

  /**
   * The first user in line whose first job has no image running and who may start one now (`may`); that user
   * goes to the back of the line, the users passed over keep their places.
   */
  private nextTurn(may: (userId: string) => boolean): { userId: string; q: Job[]; job: Job } | undefined {
    for (const userId of [...this.turns]) {
      const q = this.queues.get(userId);
      if (!q || q.length === 0) {
        this.queues.delete(userId);
        this.turns.splice(this.turns.indexOf(userId), 1);
        continue;
      }
      if (!may(userId)) continue;
      const job = q.find((j) => !j.step);
      if (!job) continue;
      // Back of the line before running, so a user who enqueues meanwhile still gets the next turn.
      this.turns.splice(this.turns.indexOf(userId), 1);
      this.turns.push(userId);
      return { userId, q, job };
    }
    return undefined;
  }

  /** Runs one image of the job (the last step also completes the task); any failure ends the task. */
  private async stepOf(job: Job, onEncoding: () => void): Promise<void> {
    const signal = job.abort.signal;
    try {
      signal.throwIfAborted();
      await this.runImage(job, signal, onEncoding);
      if (job.next >= job.task.inputs.length) await this.complete(job, signal);
    } catch (e) {
      if (this.deps.owns?.(job.task) === false) return this.release(job);
      const reason =
        signal.reason instanceof Cancelled
          ? signal.reason.reason
          : (this.deps.explain ?? userMessage)(e, job.currentName);
      await this.removeOutputs(job.task);
      await this.finish(job, reason);
    }
  }

  private async prefetch(job: Job): Promise<void> {
    const { task } = job;
    const signal = job.abort.signal;
    try {
      await Promise.all(
        task.inputs.map((input, i) =>
          input.url ? this.withFetchSlot(task.userId, signal, () => this.fetchInput(job, i, signal)) : undefined,
        ),
      );
      signal.throwIfAborted();
      await this.deps.store.save(task);
      await this.deps.onInputsFetched?.(task);
      signal.throwIfAborted();
      this.makeRunnable(job);
    } catch (e) {
      // One failed input fails the task: stop its other fetches too.
      if (!signal.aborted) job.abort.abort(e);
      if (this.deps.owns?.(job.task) === false) return this.release(job);
      const reason =
        signal.reason instanceof Cancelled
          ? signal.reason.reason
          : (this.deps.explain ?? userMessage)(e, job.currentName);
      await this.finish(job, reason);
    }
  }

  private async fetchInput(job: Job, i: number, signal: AbortSignal): Promise<void> {
    const { limits, store } = this.deps;
    const input = job.task.inputs[i]!;
    const url = input.url as string;
    const file = path.join(store.taskDir(job.task.id), 'inputs', String(i));
    const fetched = await fetchImage(url, file, {
      maxBytes: limits.maxFileSize,
      timeoutMs: limits.urlFetchTimeoutMs,
      maxRedirects: limits.urlMaxRedirects,
      allowPrivate: this.deps.allowPrivateUrls,
      signal,
    });
    Object.assign(input, await checkedInput(file, fetched.originalFileName, job.task.settings, limits));
    delete input.url;
  }

  /** At most `urlFetchesPerUser` fetches of one user run at once; the rest wait their turn (or their abort). */
  private async withFetchSlot<T>(userId: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    const max = Math.max(1, this.deps.limits.urlFetchesPerUser);
    while ((this.fetching.get(userId) ?? 0) >= max) {
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        const list = this.fetchWaiters.get(userId) ?? [];
        list.push(resolve);
        this.fetchWaiters.set(userId, list);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    signal.throwIfAborted();
    this.fetching.set(userId, (this.fetching.get(userId) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      const left = (this.fetching.get(userId) ?? 1) - 1;
      if (left > 0) this.fetching.set(userId, left);
      else this.fetching.delete(userId);
      const waiters = this.fetchWaiters.get(userId);
      this.fetchWaiters.delete(userId);
      for (const w of waiters ?? []) w();
    }
  }

  private async runImage(job: Job, signal: AbortSignal, onEncoding: () => void): Promise<void> {
    const { store, limits, now } = this.deps;
    const { task } = job;
    const outDir = path.join(store.taskDir(task.id), 'outputs');
    const i = job.next;
    // Test-only (CRISP_TEST_GATE_DIR): lets a test act while this task is mid-run; a no-op in production.
    // Before the ownership check, so a worker frozen here and thawed later still finds out it lost the lease.
    // (`input-<name>` is core's own point, at the start of each job: see engine/core/index.ts.)
    await holdPoint([`task-${task.id}-image-${i}`, `image-${i}`], signal);
    await this.deps.confirmOwnership?.(task);
    if (!job.prepared) {
      // A queued task may reach a worker started without --face-model: fail it (nothing charged) rather
      // than deliver it without the face enhancement it was priced for.
      if (task.settings.enhanceFace && !this.deps.face)
        throw new Error('face enhancement is not set up on the worker that took this task');
      await this.deps.stageInputs?.(task);
      await mkdir(outDir, { recursive: true });
      job.prepared = true;
    }
    const n = task.inputs.length;
    const input = task.inputs[i]!;
    job.currentName = input.originalFileName;
    if (task.status !== 'ENHANCING') {
      task.status = 'ENHANCING';
      task.updatedAt = now();
      await store.save(task);
    }
    const fileName = task.destination
      ? path.basename(task.destination)
      : outputFileName(
          input.originalFileName,
          {
            ...task.settings,
            passes: task.passes ?? 1,
            // A service's outputs say "-face" without naming its face model, which is the deployment's choice.
            ...(task.settings.enhanceFace ? { face: { model: null } } : {}),
          },
          job.taken,
        );
    job.taken.add(fileName);
    const outputPath = task.destination ?? path.join(outDir, fileName);
    const coreJob = imageJob(
      {
        settings: task.settings,
        passes: task.passes ?? 1,
        ...(task.preModel ? { preModel: task.preModel } : {}),
        ...(task.settings.enhanceFace && this.deps.face ? { face: this.deps.face } : {}),
        ...(task.metadata ? { metadata: task.metadata } : {}),
      },
      { inputPath: input.path as string, inputName: input.originalFileName, outputPath },
      { tileSize: this.deps.tileSize, limits },
    );
    // Users' images take tile turns in core (engine/core/tileTurns.ts); one user's images run in order.
    coreJob.turnKey = task.userId;
    const clamp = (f: number) => Math.min(1, Math.max(0, f));
    const result = await this.deps.core.upscaleFile(coreJob, {
      signal,
      onEncoding,
      onProgress: (f, eta) => this.setProgress(task, (i + clamp(f)) / n, eta),
    });
    task.provider = result.provider;
    for (const w of result.warnings) if (!task.warnings.includes(w)) task.warnings.push(w);
    const createdAt = now();
    const size = (await stat(outputPath)).size;
    const file: FileData = {
      fileName,
      fileType: OUTPUT_MIME_TYPES[task.settings.saveImageAs],
      fileSize: size,
      originalFileName: input.originalFileName,
      path: task.destination ?? path.relative(path.dirname(store.root), outputPath).split(path.sep).join('/'),
      createdAt,
      expiresAt: createdAt + limits.fileTtlMs,
      dimensions: { width: result.width, height: result.height },
      ...(result.faces ? { faces: { found: result.faces.found, enhanced: result.faces.enhanced } } : {}),
    };
    task.outputs.push(file);
    job.next = i + 1;
    this.setProgress(task, (i + 1) / n);
  }

  private async complete(job: Job, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const { task } = job;
    await this.deps.confirmOwnership?.(task);
    await this.deps.publishOutputs?.(task);
    signal.throwIfAborted();
    task.status = 'PROCESSED';
    task.progress = 100;
    task.updatedAt = this.deps.now();
    await this.deps.store.save(task);
    this.release(job);
  }

  /** Progress never goes backwards and reaches 100 only when the task is PROCESSED. */
  private setProgress(task: StoredTask, fraction: number, etaSeconds?: number): void {
    const p = Math.min(99, Math.floor(fraction * 100));
    if (p > task.progress) task.progress = p;
    if (etaSeconds !== undefined) {
      const eta = taskEtaSeconds(fraction, etaSeconds, task.inputs.length);
      if (eta !== undefined) task.etaSeconds = eta;
    }
  }

  private async removeOutputs(task: StoredTask): Promise<void> {
    task.outputs = [];
    await rm(path.join(this.deps.store.taskDir(task.id), 'outputs'), { recursive: true, force: true });
  }

  private async finish(job: Job, reason: string): Promise<void> {
    const { task } = job;
    // Free the reservation first: a poll that sees PROCESSING_FAILED must also see the credits back.
    await this.deps.onFailed(task).catch(() => undefined);
    task.status = 'PROCESSING_FAILED';
    task.error = reason;
    task.updatedAt = this.deps.now();
    await this.deps.store.save(task).catch(() => undefined);
    this.release(job);
  }

  private release(job: Job): void {
    if (this.jobs.get(job.task.id) !== job) return;
    this.jobs.delete(job.task.id);
    this.deps.onEnded?.(job.task);
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
