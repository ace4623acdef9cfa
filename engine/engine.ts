/**
 * createEngine: the upscaling contract run in-process. It owns the task queue (one inference job at a
 * time per device), persistence under a data directory, multipart uploads, and credit metering through
 * the CreditMeter interface. The CLI, the desktop app and `crisp serve` all drive this one object.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Caller, OutputFile, StartTaskInput, StoredPart, UpscalingEngine } from './api.js';
import {
  errors,
  isContractError,
  parseGetTaskStatus,
  parseStartTask,
  type StartTaskRequest,
  type StartTaskResult,
  type TaskRecord,
  type TaskStatusData,
  type UploadSession,
  type CompleteMultipartUploadResult,
} from './contract/index.js';
import { UNMETERED, type CreditMeter } from './credits/meter.js';
import { createInference, type ExecutionProviderChoice, type Inference, type PrecisionRequest } from './inference/index.js';
import { resolveLimits, type EngineLimits } from './limits.js';
import { modelSearchDirs, ModelNotInstalledError } from './models/catalog.js';
import { customModelNames, resolveTaskModel, type TaskModelSources } from './models/taskModel.js';
import { createUrlSigner, loadOrCreateSecret } from './security/urlSigner.js';
import { KeyedMutex } from './storage/mutex.js';
import { materializeInputs } from './tasks/taskInputs.js';
import { TaskRunner } from './tasks/taskRunner.js';
import { taskStats, type TaskStats } from './tasks/taskStats.js';
import { TaskStore } from './tasks/taskStore.js';
import type { StoredTask } from './tasks/taskTypes.js';
import { toStatusData, toTaskRecord, type DecorateFile } from './tasks/statusView.js';
import { UploadStore } from './uploads/uploadStore.js';
import { resolveFaceModel } from './faces/faceModels.js';
import type { DetectOptions } from './faces/detect.js';

export interface EngineOptions {
  dataDir: string;
  credits?: CreditMeter;
  /** Origin used in presigned part URLs, e.g. `http://127.0.0.1:8787`. In-process use needs none. */
  publicUrl?: string;
  allowPrivateUrls?: boolean;
  limits?: Partial<EngineLimits>;
  executionProvider?: ExecutionProviderChoice;
  threads?: number;
  /** fp32, int8 or auto (int8 where the CPU and a checked int8 variant allow it); default auto. */
  precision?: PrecisionRequest;
  /** Fixed tile size in input pixels; automatic when absent. */
  tileSize?: number;
  modelDirs?: string[];
  /**
   * extension (local mode): the models directory whose custom/ registry (`crisp models import`) is
   * offered as `custom:<name>` models. Absent — as in `crisp serve` — only the contract's 12 names exist.
   */
  customModelsDir?: string;
  /** Adds server-specific fields (downloadLink) to output FileData. */
  decorateFile?: DecorateFile;
  /** How often expired uploads and outputs are swept (0 disables the timer). */
  sweepIntervalMs?: number;
  now?: () => number;
  /** Injected inference (tests, or a shared one). */
  inference?: Inference;
  /**
   * Face enhancement for tasks with enhanceFace: the face model (catalog name or custom:N, resolved in
   * modelDirs; `null` = the best installed one) and the blend strength. Absent: enhanceFace is refused
   * with the contract's 400 before anything is charged.
   */
  faces?: { model: string | null; strength?: number; detector?: DetectOptions };
  /**
   * Run tasks left unfinished by a crash again at start (`crisp serve`), up to MAX_RESUMES times each,
   * instead of failing them. The app's own job queue retries items itself, so it leaves this off.
   */
  resumeInterrupted?: boolean;
}

export interface Engine extends UpscalingEngine {
  readonly dataDir: string;
  readonly limits: EngineLimits;
  /** extension: stops a queued or running task (within one tile); it ends PROCESSING_FAILED "Cancelled". */
  cancelTask(caller: Caller, taskId: string): Promise<void>;
  /** Removes expired uploads and tasks whose outputs have expired. */
  sweep(): Promise<void>;
  /** Operator figures over the tasks this engine knows (`/metrics`). */
  stats(): TaskStats;
}

const INTERRUPTED = 'Crisp stopped while this task was running. Start it again.';
/** A task that was unfinished at this many start-ups in a row is likely what kills the process: stop retrying it. */
export const MAX_RESUMES = 3;
const GAVE_UP = `Crisp stopped ${MAX_RESUMES} times while this task was running, so it was not tried again. Start it again, or try a smaller image.`;

/** A task can run again only if the bytes it was given are still there (URL inputs are fetched again). */
async function inputsPresent(task: StoredTask): Promise<boolean> {
  for (const input of task.inputs) {
    if (input.url) continue;
    if (!input.path) return false;
    const ok = await stat(input.path).then((st) => st.isFile(), () => false);
    if (!ok) return false;
  }
  return true;
}

export async function createEngine(opts: EngineOptions): Promise<Engine> {
  const dataDir = path.resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });
  const limits = resolveLimits(opts.limits);
  const now = opts.now ?? Date.now;
  const meter = opts.credits ?? UNMETERED;
  const modelDirs = opts.modelDirs ?? modelSearchDirs();
  const modelSources: TaskModelSources = {
    modelDirs,
    ...(opts.customModelsDir !== undefined ? { customModelsDir: path.resolve(opts.customModelsDir) } : {}),
    denoiseCacheDir: path.join(dataDir, 'models-cache'),
  };
  const decorate: DecorateFile = opts.decorateFile ?? ((_t, f) => f);
  const signer = createUrlSigner(await loadOrCreateSecret(dataDir));
  const uploads = new UploadStore(dataDir, signer, (opts.publicUrl ?? 'crisp://local').replace(/\/$/, ''), limits, now);
  const store = new TaskStore(dataDir);
  const settleLock = new KeyedMutex();
  let inference: Inference | undefined = opts.inference;
  const getInference = () =>
    (inference ??= createInference({ executionProvider: opts.executionProvider ?? 'auto', threads: opts.threads, ...(opts.precision ? { precision: opts.precision } : {}) }));

  // Anything unfinished at start-up was running (or waiting) when the process died: it is resumed from
  // its stored inputs (server) or fails (app), and never hangs. Either way the killed run may have left a
  // temp file mid-write, so partial outputs go.
  const resumable: StoredTask[] = [];
  for (const task of await store.load()) {
    task.outputs = [];
    await rm(path.join(store.taskDir(task.id), 'outputs'), { recursive: true, force: true });
    task.updatedAt = now();
    task.resumes = (task.resumes ?? 0) + 1;
    const canResume = opts.resumeInterrupted === true && task.resumes <= MAX_RESUMES && (await inputsPresent(task));
    if (canResume) {
      task.status = 'PROCESSING';
      await store.save(task);
      resumable.push(task);
      continue;
    }
    task.status = 'PROCESSING_FAILED';
    task.error = opts.resumeInterrupted === true && task.resumes > MAX_RESUMES ? GAVE_UP : INTERRUPTED;
    await store.save(task);
    await meter.release(task.id);
  }

  // Resolved once at start so a missing model stops `crisp serve --face-model` before it listens.
  const faceModel = opts.faces ? resolveFaceModel(opts.faces.model ?? undefined, modelDirs) : undefined;
  const faces = faceModel
    ? {
        detectorPath: faceModel.detectorPath,
        restorerPath: faceModel.restorerPath,
        restorerName: faceModel.name,
        strength: opts.faces?.strength ?? 1,
        ...(opts.faces?.detector ? { detect: opts.faces.detector } : {}),
      }
    : undefined;

  const runner = new TaskRunner({
    ...(faces ? { faces } : {}),
    store,
    limits,
    now,
    getInference,
    tileSize: opts.tileSize,
    models: modelSources,
    allowPrivateUrls: opts.allowPrivateUrls ?? false,
    onFailed: (task) => meter.release(task.id),
  });

  // Oldest first, so resumed tasks keep their place ahead of anything submitted after the restart.
  for (const task of resumable.sort((a, b) => a.createdAt - b.createdAt)) runner.enqueue(task);

  const ownTask = (caller: Caller, taskId: string): StoredTask => {
    const task = /^[0-9a-f-]{36}$/.test(taskId) ? store.get(taskId) : undefined;
    if (!task || task.userId !== caller.userId) throw errors.taskNotFound();
    return task;
  };

  async function startTask(caller: Caller, input: StartTaskInput): Promise<StartTaskResult> {
    // Read the registry per task so a model imported while the engine runs is usable at once.
    const custom = opts.customModelsDir === undefined ? undefined : await customModelNames(modelSources.customModelsDir);
    const req: StartTaskRequest = parseStartTask(
      input.fields,
      input.file,
      { maxFilesPerTask: limits.maxFilesPerTask },
      custom ? { extraModels: (name) => custom.has(name) } : {},
    );
    if (req.enhanceFace && !faces) throw errors.faceNotAvailable();
    try {
      await resolveTaskModel(req, modelSources, { build: false });
    } catch (e) {
      if (e instanceof ModelNotInstalledError) throw errors.badRequest(e.message);
      throw e;
    }
    const count = req.source === 'file' ? req.file.length : req.source === 'files' ? req.files.length : req.urls.length;
    const cost = meter.quote(req, count);
    const id = randomUUID();
    await meter.reserve(caller, id, cost);
    const taskDir = store.taskDir(id);
    try {
      const inputs = await materializeInputs(req, caller, path.join(taskDir, 'inputs'), uploads, limits);
      const t = now();
      const task: StoredTask = {
        id,
        userId: caller.userId,
        email: caller.email,
        settings: {
          model: req.model,
          scale: req.scale,
          saveImageAs: req.saveImageAs,
          enhanceFace: req.enhanceFace,
          compression: req.compression,
          ...(req.denoise !== undefined ? { denoise: req.denoise } : {}),
        },
        createdAt: t,
        updatedAt: t,
        status: 'PROCESSING',
        progress: 0,
        batchMode: inputs.length > 1,
        inputs,
        outputs: [],
        creditsToDeduct: cost,
        creditsDeducted: false,
        deductedCredits: 0,
        warnings: [],
      };
      await store.save(task);
      runner.enqueue(task);
    } catch (e) {
      await meter.release(id);
      await rm(taskDir, { recursive: true, force: true });
      if (isContractError(e)) throw e;
      throw errors.serverFailure('start-task');
    }
    return { message: 'Task started', taskId: id, creditsToDeduct: cost };
  }

  async function getTaskStatus(caller: Caller, body: unknown): Promise<TaskStatusData> {
    const { taskId } = parseGetTaskStatus(body);
    const task = ownTask(caller, taskId);
    if (task.status === 'PROCESSED' && !task.creditsDeducted) {
      // Many concurrent polls may see PROCESSED; the per-task lock plus the meter's idempotence deduct once.
      await settleLock.run(task.id, async () => {
        if (task.creditsDeducted) return;
        const s = await meter.settle(caller, task.id);
        task.creditsDeducted = s.creditsDeducted;
        task.deductedCredits = s.deductedCredits;
        await store.save(task);
      });
    }
    return toStatusData(task, decorate);
  }

  async function getTaskRecord(caller: Caller, taskId: string): Promise<TaskRecord> {
    const task = ownTask(caller, taskId);
    return toTaskRecord(task, await meter.balance(caller), decorate);
  }

  async function openOutput(caller: Caller, taskId: string, fileName: string): Promise<OutputFile> {
    let task: StoredTask;
    try {
      task = ownTask(caller, taskId);
    } catch {
      throw errors.notFound('File not found');
    }
    const file = task.outputs.find((f) => f.fileName === fileName);
    if (!file || task.status !== 'PROCESSED' || now() > file.expiresAt) throw errors.notFound('File not found');
    const abs = path.join(dataDir, file.path);
    const st = await stat(abs).catch(() => undefined);
    if (!st?.isFile()) throw errors.notFound('File not found');
    return { path: abs, file: decorate(task, file) };
  }

  async function sweep(): Promise<void> {
    await uploads.sweep();
    const t = now();
    for (const task of [...store.all()]) {
      const terminal = task.status === 'PROCESSED' || task.status === 'PROCESSING_FAILED';
      const expired = task.outputs.length > 0 ? task.outputs.every((f) => t > f.expiresAt) : t > task.updatedAt + limits.fileTtlMs;
      if (terminal && expired) await store.remove(task.id);
    }
  }

  const sweepTimer =
    opts.sweepIntervalMs === 0 ? undefined : setInterval(() => void sweep().catch(() => undefined), opts.sweepIntervalMs ?? 600_000);
  sweepTimer?.unref();
  void sweep().catch(() => undefined);

  return {
    dataDir,
    limits,
    getUploadUrl: async (caller: Caller, body: unknown): Promise<UploadSession> => {
      await meter.assertCanUpload(caller);
      return uploads.create(caller, body);
    },
    putUploadPart: (signedUrl: string, bytes: AsyncIterable<Uint8Array> | Uint8Array): Promise<StoredPart> =>
      uploads.putPart(signedUrl, bytes),
    completeMultipartUpload: (caller: Caller, body: unknown): Promise<CompleteMultipartUploadResult> =>
      uploads.complete(caller, body),
    startTask,
    getTaskStatus,
    getTaskRecord,
    openOutput,
    cancelTask: async (caller, taskId) => runner.cancel(ownTask(caller, taskId)),
    idle: () => runner.idle(),
    sweep,
    stats: () => taskStats(store.all()),
    close: async () => {
      if (sweepTimer) clearInterval(sweepTimer);
      await runner.close();
      await inference?.release();
    },
  };
}
