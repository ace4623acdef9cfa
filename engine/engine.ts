/**
 * createEngine: the upscaling contract run in-process. It owns the task queue (one inference job at a
 * time per device), persistence under a data directory, multipart uploads, and credit metering through
 * the CreditMeter interface; each image runs in engine/core's worker threads. `crisp serve`, `crisp worker`
 * and the CLI's server commands drive this object; the desktop's local upscales call core directly.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Caller, OutputFile, StartTaskInput, StoredPart, UpscalingEngine } from './api.js';
import {
  errors,
  isContractError,
  parseGetTaskStatus,
  parseGetUploadUrl,
  parseStartTask,
  type StartTaskRequest,
  type StartTaskResult,
  type TaskRecord,
  type TaskStatusData,
  type UploadSession,
  type CompleteMultipartUploadResult,
} from './contract/index.js';
import { UNMETERED, type CreditMeter } from './credits/meter.js';
import { outputSizeOf } from './credits/priceTable.js';
import { FetchBudget } from './quotas/fetchBudget.js';
import { assertTaskQuota, assertUploadQuota, taskUsageIn, type QuotaContext } from './quotas/userQuota.js';
import { createCore, type Core } from './core/index.js';
import type { ExecutionProviderChoice, PrecisionRequest } from './inference/index.js';
import { resolveLimits, type EngineLimits } from './limits.js';
import { listModels as listCatalogModels, modelSearchDirs, ModelNotInstalledError } from './models/catalog.js';
import { resolveTaskModelField } from './models/modelNames.js';
import { checkPreModel } from './models/preModel.js';
import { customModelNames, resolveTaskModel, type TaskModelSources } from './models/taskModel.js';
import { createUrlSigner, loadOrCreateSecret } from './security/urlSigner.js';
import { KeyedMutex } from './storage/mutex.js';
import { checkPassesFit, ImageInputError } from './pipeline/index.js';
import { materializeInputs } from './tasks/taskInputs.js';
import { TaskRunner } from './tasks/taskRunner.js';
import { publicError, publicMessage } from './tasks/userMessage.js';
import { crashPoint } from './tasks/crashPoint.js';
import { taskStats, type TaskStats } from './tasks/taskStats.js';
import { TaskStore } from './tasks/taskStore.js';
import { PgTaskStore } from './tasks/pgTaskStore.js';
import { QueueWorker, type QueueOptions } from './tasks/queueWorker.js';
import type { StoredTask } from './tasks/taskTypes.js';
import { toStatusData, toTaskRecord, type DecorateFile } from './tasks/statusView.js';
import { UploadStore, type Uploads } from './uploads/uploadStore.js';
import { S3UploadStore } from './uploads/s3UploadStore.js';
import { PgUploadIndex } from './uploads/pgUploadIndex.js';
import type { ObjectStore } from './storage/objectStore.js';
import { publishInputs, publishOutputs, stageInputs, taskPrefix } from './tasks/taskObjects.js';
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
  /** Injected upscaling core (a shared one); default: one made from executionProvider, threads and precision. */
  core?: Core;
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
  /**
   * Tasks as jobs in PostgreSQL (`--db`): records live in the `tasks` table, start-task only queues them, and
   * `queue.workers` tasks at a time are claimed and run here (0: this process only serves the API). Files
   * stay under dataDir, which every process must share (`--storage`). Absent: one process, tasks in dataDir.
   */
  queue?: QueueOptions;
  /**
   * Uploads, task inputs and outputs in a bucket (`--storage s3://…`) instead of dataDir, which then only
   * holds this process's working copies. Needs `queue`: the bucket is for several processes.
   */
  objects?: ObjectStore;
  /**
   * Set by a server (`crisp serve`, `crisp worker`): answers and task errors go to API users, so they carry
   * no file-system path and no server command; the full detail goes to this log (the operator's). Absent
   * (the desktop app, the CLI): the user is the operator and gets the full message.
   */
  operatorLog?: (detail: string) => void;
}

export interface Engine extends UpscalingEngine {
  readonly dataDir: string;
  readonly limits: EngineLimits;
  /** extension: stops a queued or running task (within one tile); it ends PROCESSING_FAILED "Cancelled". */
  cancelTask(caller: Caller, taskId: string): Promise<void>;
  /** Removes expired uploads and tasks whose outputs have expired. */
  sweep(): Promise<void>;
  /** Operator figures over the tasks this engine knows (`/metrics`); with a queue, over every task in the database. */
  stats(): Promise<TaskStats>;
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
    const ok = await stat(input.path).then(
      (st) => st.isFile(),
      () => false,
    );
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
  const objects = opts.objects;
  if (objects && !opts.queue) throw new Error('object storage (--storage s3://…) needs the PostgreSQL queue (--db)');
  const uploads: Uploads = objects
    ? new S3UploadStore(objects, limits, now, opts.queue ? new PgUploadIndex(opts.queue.pool) : undefined)
    : new UploadStore(
        dataDir,
        signer,
        (opts.publicUrl ?? 'crisp://local').replace(/\/$/, ''),
        limits,
        now,
        opts.queue !== undefined,
      );
  const pgStore = opts.queue ? new PgTaskStore(dataDir, opts.queue.pool, limits.fileTtlMs, now) : undefined;
  const store: TaskStore = pgStore ?? new TaskStore(dataDir);
  let worker: QueueWorker | undefined;
  const settleLock = new KeyedMutex();
  // The heavy work of every task runs in core's worker threads, so this process's event loop (the API,
  // the lease heartbeat) stays free; its threads start with the first image.
  const ownsCore = opts.core === undefined;
  const core: Core =
    opts.core ??
    createCore({
      executionProvider: opts.executionProvider ?? 'auto',
      ...(opts.threads ? { threads: opts.threads } : {}),
      ...(opts.precision ? { precision: opts.precision } : {}),
      models: modelSources,
    });

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

  // The embedded store cannot write a charge and a task in one step: a kill between start-task's
  // reservation and its task record leaves a charge without a task (and a folder without a record, which
  // store.load() removed). Every such charge is released here, before anything new is reserved.
  if (!pgStore && meter.reservedTaskIds) {
    for (const id of await meter.reservedTaskIds()) if (!store.get(id)) await meter.release(id);
  }

  // Resolved once at start so a missing model stops `crisp serve --face-model` before it listens.
  const faceModel = opts.faces ? resolveFaceModel(opts.faces.model ?? undefined, modelDirs) : undefined;
  const faces = faceModel
    ? {
        model: faceModel.name,
        strength: opts.faces?.strength ?? 1,
        ...(opts.faces?.detector ? { detect: opts.faces.detector } : {}),
      }
    : undefined;

  const runner = new TaskRunner({
    ...(faces ? { face: faces } : {}),
    store,
    limits,
    now,
    core,
    tileSize: opts.tileSize,
    allowPrivateUrls: opts.allowPrivateUrls ?? false,
    onFailed: (task) => meter.release(task.id),
    ...(opts.operatorLog ? { explain: (e: unknown, name?: string) => publicMessage(e, name, opts.operatorLog!) } : {}),
    ...(opts.queue
      ? {
          owns: (task: StoredTask) => worker?.owns(task) ?? false,
          ...(pgStore ? { confirmOwnership: (task: StoredTask) => pgStore.confirmHeld(task.id) } : {}),
          onEnded: (task: StoredTask) => {
            worker?.ended(task);
            // With a bucket the local folder was only a working copy.
            if (objects) void rm(store.taskDir(task.id), { recursive: true, force: true }).catch(() => undefined);
          },
        }
      : {}),
    ...(objects
      ? {
          stageInputs: (task: StoredTask) => stageInputs(objects, store, task),
          publishOutputs: (task: StoredTask) => publishOutputs(objects, store, task),
        }
      : {}),
    onInputsFetched: async (task) => {
      // URL images are quoted at the base size when the task starts; now that their size is known,
      // raise the reservation if they are larger (or fail the task, charging nothing).
      const model = await resolveTaskModel(task.settings, modelSources, { build: false });
      const cost = priceTask(task.settings, task.inputs, {
        nativeScale: model.entry.scale,
        ...(task.passes ? { passes: task.passes } : {}),
      });
      if (cost <= task.creditsToDeduct) return;
      try {
        await meter.adjust({ userId: task.userId, email: task.email }, task.id, cost);
      } catch (e) {
        if (isContractError(e) && e.status === 402) {
          throw errors.badRequest(
            `the images at these URLs cost ${cost} credits at their size (${task.creditsToDeduct} were reserved) and your available credits do not cover the difference`,
          );
        }
        throw e;
      }
      task.creditsToDeduct = cost;
      await store.save(task);
    },
  });
  if (opts.queue && pgStore) {
    worker = new QueueWorker(opts.queue, {
      store: pgStore,
      runner,
      now,
      release: (id) => meter.release(id),
      gaveUpMessage: GAVE_UP,
    });
  }
  const fetchBudget = new FetchBudget(limits.urlFetchBudget, limits.urlFetchBudgetWindowMs, now);
  const quotas: QuotaContext = {
    limits,
    uploadUsageOf: (userId) => uploads.usageOf(userId),
    // With a queue a user's tasks wait, run and finish on any process: the database counts them all.
    activeTasksOf: (userId) => (pgStore ? pgStore.activeCount(userId) : runner.activeTasksOf(userId)),
    taskUsageOf: (userId) => (pgStore ? pgStore.usageOf(userId, now()) : taskUsageIn(store.all(), userId, now())),
    now,
  };
  // Priced by output size and by the pixels the model produces (docs/api.md#prices).
  const priceTask = (
    settings: StoredTask['settings'],
    inputs: readonly { dimensions?: { width: number; height: number } }[],
    work: { nativeScale: number; passes?: number },
  ) =>
    meter.quote(
      settings,
      inputs.map((i) => (i.dimensions ? outputSizeOf(i.dimensions, settings.scale, work) : undefined)),
    );

  // Oldest first, so resumed tasks keep their place ahead of anything submitted after the restart.
  // A process that runs tasks starts core's threads now rather than on its first image; an API-only one never does.
  if (!opts.queue || opts.queue.workers > 0) core.warm();
  for (const task of resumable.sort((a, b) => a.createdAt - b.createdAt)) runner.enqueue(task);
  worker?.start();

  const ownTask = async (caller: Caller, taskId: string): Promise<StoredTask> => {
    const task = /^[0-9a-f-]{36}$/.test(taskId) ? await store.fetch(taskId) : undefined;
    if (!task || task.userId !== caller.userId) throw errors.taskNotFound();
    return task;
  };

  async function startTask(caller: Caller, input: StartTaskInput): Promise<StartTaskResult> {
    // Read the registry per task so a model imported while the engine runs is usable at once.
    const custom =
      opts.customModelsDir === undefined ? undefined : await customModelNames(modelSources.customModelsDir);
    // An imported model answers to its bare name too; an unknown name gets "did you mean …" in the 400.
    const named = resolveTaskModelField(input.fields, custom);
    let req: StartTaskRequest;
    try {
      req = parseStartTask(
        named.fields,
        input.file,
        { maxFilesPerTask: limits.maxFilesPerTask },
        custom ? { extraModels: (name) => custom.has(name) } : {},
      );
    } catch (e) {
      throw named.suggestion && isContractError(e) && e.status === 400
        ? errors.badRequest(`${e.message.replace(/^Bad Request: /, '')}.${named.suggestion}`)
        : e;
    }
    if (req.enhanceFace && !faces) throw errors.faceNotAvailable();
    let nativeScale: number;
    try {
      nativeScale = (await resolveTaskModel(req, modelSources, { build: false })).entry.scale;
    } catch (e) {
      if (e instanceof ModelNotInstalledError)
        throw errors.badRequest(opts.operatorLog ? publicMessage(e, undefined, opts.operatorLog) : e.message);
      throw e;
    }
    const preModel =
      input.preModel === undefined ? undefined : await checkPreModel(input.preModel, custom, modelSources);
    const count = req.source === 'file' ? req.file.length : req.source === 'files' ? req.files.length : req.urls.length;
    await assertTaskQuota(quotas, caller, count);
    // Nothing is read for a caller who cannot pay even the base price (the server checked before the body, too).
    await meter.assertCanAfford(caller, meter.quote(req, count));
    const id = randomUUID();
    const taskDir = store.taskDir(id);
    let cost = 0;
    let reserved = false;
    try {
      // Headers are read here (cheap), so the price can follow the output size before anything is reserved.
      const inputs = await materializeInputs(req, caller, path.join(taskDir, 'inputs'), uploads, limits, {
        move: input.moveFiles === true,
        // An in-process caller's chosen destination is where the output and its temp raster will need room.
        outputDir: input.outputPath ? path.dirname(input.outputPath) : undefined,
      });
      if (input.passes === 2) {
        // Double upscale: refused from the headers, before any pass, when the result would exceed the limits.
        for (const i of inputs) {
          if (!i.dimensions) continue;
          try {
            checkPassesFit(i.dimensions.width, i.dimensions.height, req.scale, 2, req.saveImageAs, {
              name: i.originalFileName,
              maxInputPixels: limits.maxInputPixels,
              maxOutputPixels: limits.maxOutputPixels,
            });
          } catch (e) {
            if (e instanceof ImageInputError) throw errors.badRequest(e.message);
            throw e;
          }
        }
      }
      cost = priceTask(req, inputs, { nativeScale, ...(input.passes === 2 ? { passes: 2 } : {}) });
      // Taken before the task exists: a refusal here (429) must not leave a saved task behind.
      if (req.source === 'urls') fetchBudget.take(caller.userId, req.urls.length);
      // Whichever worker claims the task reads its inputs from the bucket.
      if (objects) await publishInputs(objects, id, inputs);
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
        ...(input.outputPath !== undefined && inputs.length === 1
          ? { destination: path.resolve(input.outputPath) }
          : {}),
        ...(input.passes === 2 ? { passes: 2 as const } : {}),
        ...(preModel ? { preModel } : {}),
        ...(input.metadata ? { metadata: input.metadata } : {}),
      };
      if (pgStore && meter.reserveWith) {
        // One transaction: the charge and the task row exist together or not at all.
        await meter.reserveWith(caller, id, cost, async (db) => {
          crashPoint('start-task:reserved');
          await pgStore.insertNew(db, task);
        });
        reserved = true;
      } else {
        await meter.reserve(caller, id, cost);
        reserved = true;
        // A kill here leaves a charge without a task record: the next start-up releases it (above).
        crashPoint('start-task:reserved');
        await store.save(task);
      }
      if (objects) await rm(taskDir, { recursive: true, force: true });
      // Queued: a worker (this process's or another's) claims the row; otherwise it runs here.
      if (pgStore) worker?.poke();
      else runner.enqueue(task);
    } catch (e) {
      if (reserved) await meter.release(id);
      await rm(taskDir, { recursive: true, force: true });
      await objects?.removePrefix(taskPrefix(id)).catch(() => undefined);
      // e.g. the disk check names the folder it measured: the operator's detail, not the user's.
      if (isContractError(e)) throw opts.operatorLog ? publicError(e, opts.operatorLog) : e;
      throw errors.serverFailure('start-task');
    }
    return { message: 'Task started', taskId: id, creditsToDeduct: cost };
  }

  async function getTaskStatus(caller: Caller, body: unknown): Promise<TaskStatusData> {
    const { taskId } = parseGetTaskStatus(body);
    const task = await ownTask(caller, taskId);
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
    const task = await ownTask(caller, taskId);
    return toTaskRecord(task, await meter.balance(caller), decorate);
  }

  async function openOutput(caller: Caller, taskId: string, fileName: string): Promise<OutputFile> {
    let task: StoredTask;
    try {
      task = await ownTask(caller, taskId);
    } catch {
      throw errors.notFound('File not found');
    }
    const file = task.outputs.find((f) => f.fileName === fileName);
    if (!file || task.status !== 'PROCESSED' || now() > file.expiresAt) throw errors.notFound('File not found');
    if (objects) {
      if (!(await objects.head(file.path))) throw errors.notFound('File not found');
      // Short-lived: the download link (ours, checked above) is what the user holds; this only carries the bytes.
      const redirect = await objects.presignGet(file.path, {
        fileName: file.fileName,
        contentType: file.fileType,
        expiresInSeconds: 300,
      });
      return { path: file.path, file: decorate(task, file), redirect };
    }
    const abs = path.isAbsolute(file.path) ? file.path : path.join(dataDir, file.path);
    const st = await stat(abs).catch(() => undefined);
    if (!st?.isFile()) throw errors.notFound('File not found');
    return { path: abs, file: decorate(task, file) };
  }

  /**
   * A removed task's charge is never left reserved. Rule (docs/api.md#credits): a charge is settled by the
   * first status poll that sees PROCESSED; a task removed before any such poll (never polled until its
   * files expired) releases its reservation, since the user never received its result. Settled and
   * released charges are left as they are (release is idempotent).
   */
  async function removeTask(id: string): Promise<void> {
    await meter.release(id);
    // Objects first: a row without objects is swept again next time; objects without a row would leak.
    await objects?.removePrefix(taskPrefix(id));
    await store.remove(id);
  }

  async function sweep(): Promise<void> {
    await uploads.sweep();
    // Start-task bodies stream into incoming/<id>/ and leave it at once; anything older is crash debris.
    const incoming = path.join(dataDir, 'incoming');
    for (const name of await readdir(incoming).catch(() => [] as string[])) {
      const st = await stat(path.join(incoming, name)).catch(() => undefined);
      if (st && now() - st.mtimeMs > limits.uploadTtlMs)
        await rm(path.join(incoming, name), { recursive: true, force: true });
    }
    const t = now();
    for (const task of [...store.all()]) {
      const terminal = task.status === 'PROCESSED' || task.status === 'PROCESSING_FAILED';
      const expired =
        task.outputs.length > 0 ? task.outputs.every((f) => t > f.expiresAt) : t > task.updatedAt + limits.fileTtlMs;
      if (terminal && expired) await removeTask(task.id);
    }
    // Tasks finished on other processes are not in this one's memory: the database lists them.
    if (pgStore) for (const id of await pgStore.expiredTerminal(t, limits.fileTtlMs)) await removeTask(id);
  }

  const sweepTimer =
    opts.sweepIntervalMs === 0
      ? undefined
      : setInterval(() => void sweep().catch(() => undefined), opts.sweepIntervalMs ?? 600_000);
  sweepTimer?.unref();
  void sweep().catch(() => undefined);

  return {
    dataDir,
    limits,
    getUploadUrl: async (caller: Caller, body: unknown): Promise<UploadSession> => {
      await meter.assertCanUpload(caller);
      const req = parseGetUploadUrl(body, { maxFileSize: limits.maxFileSize });
      await assertUploadQuota(quotas, caller, req.fileSize);
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
    // Queue mode: only a task held by this process's worker can be stopped here.
    cancelTask: async (caller, taskId) => runner.cancel(await ownTask(caller, taskId)),
    idle: () => runner.idle(),
    sweep,
    stats: async () => (pgStore ? pgStore.stats() : taskStats(store.all())),
    faceEnhancement: faces !== undefined,
    // Read per call, like startTask: a model fetched or imported while the server runs is listed at once.
    installedModels: async () => [
      ...listCatalogModels(modelDirs)
        .filter((m) => m.installed)
        .map((m) => m.name),
      ...(await customModelNames(modelSources.customModelsDir)),
    ],
    close: async () => {
      if (sweepTimer) clearInterval(sweepTimer);
      if (worker) await worker.close();
      else await runner.close();
      if (ownsCore) await core.close();
    },
  };
}
