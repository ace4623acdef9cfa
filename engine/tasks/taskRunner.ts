/**
 * The task queue: tasks run one at a time (one inference job per device), images of a batch in order.
 * Status: PROCESSING while queued, fetching or decoding; ENHANCING while a model runs; PROCESSED when
 * every output is written; PROCESSING_FAILED on any error, cancel or shutdown. A failed batch keeps no
 * outputs: a task is delivered whole or not at all, and nothing is charged for it.
 */
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { OUTPUT_MIME_TYPES, type FileData } from '../contract/index.js';
import { fetchImage } from '../inputs/fetchImage.js';
import type { Inference } from '../inference/index.js';
import type { EngineLimits } from '../limits.js';
import { resolveTaskModel, type TaskModelSources } from '../models/taskModel.js';
import { upscaleImage } from '../pipeline/index.js';
import type { FaceStageOptions } from '../faces/faceStage.js';
import { checkedInput } from './taskInputs.js';
import { outputFileName } from './outputNames.js';
import type { TaskStore } from './taskStore.js';
import type { StoredTask } from './taskTypes.js';
import { userMessage } from './userMessage.js';

export interface TaskRunnerDeps {
  store: TaskStore;
  limits: EngineLimits;
  now: () => number;
  getInference: () => Inference;
  /** Face stage for tasks with enhanceFace (the engine refuses those tasks when this is absent). */
  faces?: Omit<FaceStageOptions, 'signal'>;
  tileSize: number | undefined;
  /** Catalog dirs, the custom registry and the denoise cache the task's model is resolved from. */
  models: TaskModelSources;
  allowPrivateUrls: boolean;
  onFailed: (task: StoredTask) => Promise<void>;
}

class Cancelled extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export class TaskRunner {
  private readonly queue: StoredTask[] = [];
  private running: { task: StoredTask; abort: AbortController; done: Promise<void> } | undefined;
  private pumping: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly deps: TaskRunnerDeps) {}

  enqueue(task: StoredTask): void {
    if (this.closed) throw new Error('engine is closed');
    this.queue.push(task);
    this.pumping ??= this.pump().finally(() => {
      this.pumping = undefined;
    });
  }

  async idle(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  async cancel(task: StoredTask, reason = 'Cancelled'): Promise<void> {
    const i = this.queue.indexOf(task);
    if (i >= 0) {
      this.queue.splice(i, 1);
      await this.fail(task, reason);
    } else if (this.running?.task === task) {
      this.running.abort.abort(new Cancelled(reason));
      await this.running.done;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.queue.splice(0)) await this.fail(t, 'Crisp was shut down before this task ran. Start it again.');
    this.running?.abort.abort(new Cancelled('Crisp was shut down while this task was running. Start it again.'));
    await this.idle();
  }

  private async pump(): Promise<void> {
    for (let task = this.queue.shift(); task; task = this.queue.shift()) {
      const abort = new AbortController();
      const done = this.runOne(task, abort.signal);
      this.running = { task, abort, done };
      await done;
      this.running = undefined;
    }
  }

  private currentName: string | undefined;

  private async runOne(task: StoredTask, signal: AbortSignal): Promise<void> {
    try {
      await this.run(task, signal);
    } catch (e) {
      const reason = signal.reason instanceof Cancelled ? signal.reason.reason : userMessage(e, this.currentName);
      await this.removeOutputs(task);
      await this.fail(task, reason);
    }
  }

  private async run(task: StoredTask, signal: AbortSignal): Promise<void> {
    const { store, limits, now } = this.deps;
    const model = await resolveTaskModel(task.settings, this.deps.models);
    const inference = this.deps.getInference();
    const outDir = path.join(store.taskDir(task.id), 'outputs');
    const n = task.inputs.length;
    const taken = new Set<string>();
    await mkdir(outDir, { recursive: true });

    for (const [i, input] of task.inputs.entries()) {
      signal.throwIfAborted();
      this.currentName = input.originalFileName;
      if (input.url) {
        const fetched = await fetchImage(input.url, {
          maxBytes: limits.maxFileSize,
          timeoutMs: limits.urlFetchTimeoutMs,
          maxRedirects: limits.urlMaxRedirects,
          allowPrivate: this.deps.allowPrivateUrls,
          signal,
        });
        const file = path.join(store.taskDir(task.id), 'inputs', String(i));
        await writeFile(file, fetched.data);
        Object.assign(input, await checkedInput(file, fetched.originalFileName, task.settings, limits));
        delete input.url;
        await store.save(task);
      }
      if (task.status !== 'ENHANCING') {
        task.status = 'ENHANCING';
        task.updatedAt = now();
        await store.save(task);
      }
      const fileName = outputFileName(input.originalFileName, task.settings, taken);
      taken.add(fileName);
      const outputPath = path.join(outDir, fileName);
      const result = await upscaleImage(
        {
          input: { path: input.path as string },
          inputName: input.originalFileName,
          model,
          scale: task.settings.scale,
          format: task.settings.saveImageAs,
          compression: task.settings.compression,
          outputPath,
          tileSize: this.deps.tileSize,
          ...(task.settings.enhanceFace && this.deps.faces ? { faces: this.deps.faces } : {}),
          signal,
          limits: { maxInputPixels: limits.maxInputPixels, maxOutputPixels: limits.maxOutputPixels, streamAboveBytes: limits.streamAboveBytes, diskReserveBytes: limits.diskReserveBytes },
          onProgress: (f, eta) => this.setProgress(task, (i + Math.min(1, Math.max(0, f))) / n, eta),
        },
        inference,
      );
      task.provider = result.provider;
      for (const w of result.warnings ?? []) if (!task.warnings.includes(w)) task.warnings.push(w);
      const createdAt = now();
      const size = (await stat(outputPath)).size;
      const file: FileData = {
        fileName,
        fileType: OUTPUT_MIME_TYPES[task.settings.saveImageAs],
        fileSize: size,
        originalFileName: input.originalFileName,
        path: path.relative(path.dirname(store.root), outputPath).split(path.sep).join('/'),
        createdAt,
        expiresAt: createdAt + limits.fileTtlMs,
        dimensions: { width: result.width, height: result.height },
        ...(result.faces ? { faces: { found: result.faces.found, enhanced: result.faces.enhanced } } : {}),
      };
      task.outputs.push(file);
      this.setProgress(task, (i + 1) / n);
    }
    signal.throwIfAborted();
    task.status = 'PROCESSED';
    task.progress = 100;
    task.updatedAt = now();
    this.currentName = undefined;
    await store.save(task);
  }

  /** Progress never goes backwards and reaches 100 only when the task is PROCESSED. */
  private setProgress(task: StoredTask, fraction: number, etaSeconds?: number): void {
    const p = Math.min(99, Math.floor(fraction * 100));
    if (p > task.progress) task.progress = p;
    if (etaSeconds !== undefined) {
      // Images after the current one are assumed to take as long as this one (its elapsed + remaining).
      const n = task.inputs.length;
      const done = fraction * n;
      const i = Math.min(n - 1, Math.floor(done));
      const current = done - i;
      const perImage = current > 0.02 ? etaSeconds / (1 - current) : etaSeconds;
      task.etaSeconds = Math.round(etaSeconds + perImage * (n - 1 - i));
    }
  }

  private async removeOutputs(task: StoredTask): Promise<void> {
    task.outputs = [];
    await rm(path.join(this.deps.store.taskDir(task.id), 'outputs'), { recursive: true, force: true });
  }

  private async fail(task: StoredTask, reason: string): Promise<void> {
    task.status = 'PROCESSING_FAILED';
    task.error = reason;
    task.updatedAt = this.deps.now();
    this.currentName = undefined;
    await this.deps.store.save(task).catch(() => undefined);
    await this.deps.onFailed(task).catch(() => undefined);
  }
}
