/**
 * The multi-tenant service, assembled: the contract's operations (uploads, start-task, status, records,
 * downloads, cancel), credits through the CreditMeter, per-user quotas, the fair task runner and the sweep.
 * It takes what differs between deployments as explicit parts (EngineParts): where task records live and who
 * runs them (TaskRecords), and where uploads and task files live (TaskFiles). Each deployment is one small
 * composition that builds its parts and hands them here: embeddedEngine.ts (one process: JSON records, local
 * files), postgresEngine.ts (PostgreSQL records and queue, files in a shared folder or, with s3Objects.ts, a
 * bucket). Each image runs in engine/core's worker threads; the desktop's local upscales call core directly.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Caller, OutputFile, StartTaskInput, StoredPart, UpscalingEngine } from './api.js';
import {
  errors,
  isContractError,
  type CompleteMultipartUploadResult,
  type FileData,
  type StartTaskRequest,
  type StartTaskResult,
  type TaskRecord,
  type TaskStatusData,
  type UploadSession,
} from '../contract/index.js';
import { parseGetTaskStatus, parseGetUploadUrl, parseStartTask } from '../contract/parseRequest.js';
import { createCore, type Core, type FaceJob } from '../core/index.js';
import { UNMETERED, type CreditMeter } from './credits/meter.js';
import { outputSizeOf } from './credits/priceTable.js';
import { resolveFaceModel } from '../core/faces/faceModels.js';
import type { ExecutionProviderChoice, PrecisionRequest } from '../core/inference/index.js';
import { resolveLimits, type EngineLimits } from './limits.js';
import { listModels as listCatalogModels, modelSearchDirs, ModelNotInstalledError } from '../core/models/catalog.js';
import { resolveTaskModelField } from '../core/models/modelNames.js';
import { checkPreModel } from '../core/models/preModel.js';
import { customModelNames, resolveTaskModel, type TaskModelSources } from '../core/models/taskModel.js';
import { checkPassesFit, ImageInputError } from '../core/pipeline/index.js';
import { FetchBudget } from './quotas/fetchBudget.js';
import { assertTaskQuota, assertUploadQuota, type QuotaContext, type TaskUsage } from './quotas/userQuota.js';
import { KeyedMutex } from './storage/mutex.js';
import { materializeInputs } from './tasks/taskInputs.js';
import { TaskRunner, type TaskRunnerDeps } from './tasks/taskRunner.js';
import type { TaskStats } from './tasks/taskStats.js';
import type { TaskStore } from './tasks/taskStore.js';
import type { StoredTask, TaskInput } from './tasks/taskTypes.js';
import { toStatusData, toTaskRecord, type DecorateFile } from './tasks/statusView.js';
import { publicError, publicMessage } from './tasks/userMessage.js';
import type { Uploads } from './uploads/uploadStore.js';

/** What every deployment takes; what only one needs (a queue, a bucket, resuming at start) is its composition's. */
export interface EngineOptions {
  /** This process's folder: task records and files (embedded, shared storage) or only working copies (bucket). */
  dataDir: string;
  credits?: CreditMeter;
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
   * The face of every task with the contract's enhanceFace (core's one face vocabulary, FaceJob): the face
   * model (catalog name or custom:N, resolved in modelDirs; `null` = the best installed one) and strength.
   * The contract has no per-task face model, so this deployment setting goes into each task's job. Absent:
   * enhanceFace is refused with the contract's 400 before anything is charged.
   */
  face?: FaceJob;
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

/** A task that was unfinished at this many start-ups in a row is likely what kills the process: stop retrying it. */
export const MAX_RESUMES = 3;
/** The error of a task given up after MAX_RESUMES start-ups (embedded) or as many lost leases (queue). */
export const GAVE_UP = `Crisp stopped ${MAX_RESUMES} times while this task was running, so it was not tried again. Start it again, or try a smaller image.`;

/** What a deployment's parts are built from: the resolved common settings. */
export interface EngineContext {
  dataDir: string;
  limits: EngineLimits;
  now: () => number;
  meter: CreditMeter;
}

/**
 * Where task records live and who runs them: the embedded JSON records and this process's runner, or
 * PostgreSQL's tasks table and the queue workers that claim its rows.
 */
export interface TaskRecords {
  readonly store: TaskStore;
  /** Whether this process runs tasks: core's threads start at once (never in an API-only process). */
  readonly runsTasks: boolean;
  /** Queue mode: the runner's ownership hooks (a lost lease drops a task without failing it). */
  readonly runnerHooks?: Pick<TaskRunnerDeps, 'owns' | 'confirmOwnership' | 'onEnded'>;
  /**
   * At start, with the runner built on this store: tasks a crash left unfinished are failed or resumed, and
   * those to run again come back, oldest first, to be submitted before anything new.
   */
  start(runner: TaskRunner): Promise<StoredTask[]>;
  /** Saves a new task with its credit reservation (one transaction where the records can); on a throw, neither stands. */
  insert(task: StoredTask, caller: Caller, cost: number): Promise<void>;
  /** A saved task is ready: run here, or wake whoever claims it. */
  submit(task: StoredTask): void;
  /** Tasks of a user waiting or running, and their outputs (quotas): this process's, or every process's. */
  activeTasksOf(userId: string): number | Promise<number>;
  taskUsageOf(userId: string): TaskUsage | Promise<TaskUsage>;
  stats(): Promise<TaskStats>;
  /** Terminal tasks past their files' lifetime that only the records know of (other processes' tasks). */
  expiredElsewhere(now: number): Promise<string[]>;
  /** Stops running: embedded, running tasks end; queue, they are handed back for another worker. */
  close(): Promise<void>;
}

/** Where uploads and task files live: this process's (or a shared) folder, or a bucket. */
export interface TaskFiles {
  readonly uploads: Uploads;
  /** The runner's hooks for files that live elsewhere: inputs brought to this disk, outputs published. */
  readonly runnerHooks?: Pick<TaskRunnerDeps, 'stageInputs' | 'publishOutputs' | 'onEnded'>;
  /** start-task, before the record exists: inputs put where any process can read them. */
  publishInputs?(taskId: string, inputs: TaskInput[]): Promise<void>;
  /** start-task, once the record exists: what this process kept only to publish can go. */
  inserted?(task: StoredTask): Promise<void>;
  /** A task's files outside its folder (a failed start, an expired task). */
  remove(taskId: string): Promise<void>;
  /** Where an output's bytes are served from; undefined when they are gone. */
  locate(file: FileData): Promise<{ path: string; redirect?: string } | undefined>;
}

export interface EngineParts {
  tasks: TaskRecords;
  files: TaskFiles;
}

/** Builds a deployment's engine: common settings resolved, then its parts, then the shared service over them. */
export async function assembleEngine(
  opts: EngineOptions,
  buildParts: (ctx: EngineContext) => EngineParts | Promise<EngineParts>,
): Promise<Engine> {
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
  // Resolved once at start so a missing model stops `crisp serve --face-model` before it listens.
  const face: FaceJob | undefined = opts.face
    ? { ...opts.face, model: resolveFaceModel(opts.face.model ?? undefined, modelDirs).name }
    : undefined;
  const { tasks, files } = await buildParts({ dataDir, limits, now, meter });
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

  const onEnded = [tasks.runnerHooks?.onEnded, files.runnerHooks?.onEnded].filter((f) => f !== undefined);
  const runner = new TaskRunner({
    ...(face ? { face } : {}),
    store: tasks.store,
    limits,
    now,
    core,
    tileSize: opts.tileSize,
    allowPrivateUrls: opts.allowPrivateUrls ?? false,
    onFailed: (task) => meter.release(task.id),
    ...(opts.operatorLog ? { explain: (e: unknown, name?: string) => publicMessage(e, name, opts.operatorLog!) } : {}),
    ...(tasks.runnerHooks?.owns ? { owns: tasks.runnerHooks.owns } : {}),
    ...(tasks.runnerHooks?.confirmOwnership ? { confirmOwnership: tasks.runnerHooks.confirmOwnership } : {}),
    ...(onEnded.length > 0 ? { onEnded: (task: StoredTask) => onEnded.forEach((f) => f(task)) } : {}),
    ...(files.runnerHooks?.stageInputs ? { stageInputs: files.runnerHooks.stageInputs } : {}),
    ...(files.runnerHooks?.publishOutputs ? { publishOutputs: files.runnerHooks.publishOutputs } : {}),
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
      await tasks.store.save(task);
    },
  });
  const fetchBudget = new FetchBudget(limits.urlFetchBudget, limits.urlFetchBudgetWindowMs, now);
  const quotas: QuotaContext = {
    limits,
    uploadUsageOf: (userId) => files.uploads.usageOf(userId),
    activeTasksOf: (userId) => tasks.activeTasksOf(userId),
    taskUsageOf: (userId) => tasks.taskUsageOf(userId),
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

  // Anything a crash left unfinished is failed or comes back to run again, before anything new is accepted.
  const resumable = await tasks.start(runner);
  // A process that runs tasks starts core's threads now rather than on its first image; an API-only one never does.
  if (tasks.runsTasks) core.warm();
  for (const task of resumable) tasks.submit(task);

  const ownTask = async (caller: Caller, taskId: string): Promise<StoredTask> => {
    const task = /^[0-9a-f-]{36}$/.test(taskId) ? await tasks.store.fetch(taskId) : undefined;
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
    if (req.enhanceFace && !face) throw errors.faceNotAvailable();
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
    const taskDir = tasks.store.taskDir(id);
    let cost = 0;
    let reserved = false;
    try {
      // Headers are read here (cheap), so the price can follow the output size before anything is reserved.
      const inputs = await materializeInputs(req, caller, path.join(taskDir, 'inputs'), files.uploads, limits, {
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
      // Whichever worker claims the task reads its inputs from where every process can (a bucket).
      await files.publishInputs?.(id, inputs);
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
      // The charge and the record: one transaction where the records are in the database.
      await tasks.insert(task, caller, cost);
      reserved = true;
      await files.inserted?.(task);
      // Run here, or queued for whichever worker claims it.
      tasks.submit(task);
    } catch (e) {
      if (reserved) await meter.release(id);
      await rm(taskDir, { recursive: true, force: true });
      await files.remove(id).catch(() => undefined);
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
        await tasks.store.save(task);
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
    const found = await files.locate(file);
    if (!found) throw errors.notFound('File not found');
    return { ...found, file: decorate(task, file) };
  }

  /**
   * A removed task's charge is never left reserved. Rule (docs/api.md#credits): a charge is settled by the
   * first status poll that sees PROCESSED; a task removed before any such poll (never polled until its
   * files expired) releases its reservation, since the user never received its result. Settled and
   * released charges are left as they are (release is idempotent).
   */
  async function removeTask(id: string): Promise<void> {
    await meter.release(id);
    // Shared files first: a record without files is swept again next time; files without a record would leak.
    await files.remove(id);
    await tasks.store.remove(id);
  }

  async function sweep(): Promise<void> {
    await files.uploads.sweep();
    // Start-task bodies stream into incoming/<id>/ and leave it at once; anything older is crash debris.
    const incoming = path.join(dataDir, 'incoming');
    for (const name of await readdir(incoming).catch(() => [] as string[])) {
      const st = await stat(path.join(incoming, name)).catch(() => undefined);
      if (st && now() - st.mtimeMs > limits.uploadTtlMs)
        await rm(path.join(incoming, name), { recursive: true, force: true });
    }
    const t = now();
    for (const task of [...tasks.store.all()]) {
      const terminal = task.status === 'PROCESSED' || task.status === 'PROCESSING_FAILED';
      const expired =
        task.outputs.length > 0 ? task.outputs.every((f) => t > f.expiresAt) : t > task.updatedAt + limits.fileTtlMs;
      if (terminal && expired) await removeTask(task.id);
    }
    // Tasks finished on other processes are not in this one's memory: the records list them.
    for (const id of await tasks.expiredElsewhere(t)) await removeTask(id);
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
      return files.uploads.create(caller, body);
    },
    putUploadPart: (signedUrl: string, bytes: AsyncIterable<Uint8Array> | Uint8Array): Promise<StoredPart> =>
      files.uploads.putPart(signedUrl, bytes),
    completeMultipartUpload: (caller: Caller, body: unknown): Promise<CompleteMultipartUploadResult> =>
      files.uploads.complete(caller, body),
    startTask,
    getTaskStatus,
    getTaskRecord,
    openOutput,
    // Queue mode: only a task held by this process's worker can be stopped here.
    cancelTask: async (caller, taskId) => runner.cancel(await ownTask(caller, taskId)),
    idle: () => runner.idle(),
    sweep,
    stats: () => tasks.stats(),
    faceEnhancement: face !== undefined,
    // Read per call, like startTask: a model fetched or imported while the server runs is listed at once.
    installedModels: async () => [
      ...listCatalogModels(modelDirs)
        .filter((m) => m.installed)
        .map((m) => m.name),
      ...(await customModelNames(modelSources.customModelsDir)),
    ],
    close: async () => {
      if (sweepTimer) clearInterval(sweepTimer);
      await tasks.close();
      if (ownsCore) await core.close();
    },
  };
}
