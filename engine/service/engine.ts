/**
 * The multi-tenant service, assembled: the contract's operations (uploads, start-task, status, records,
 * downloads, cancel), credits through the CreditMeter, per-user quotas, the fair task runner and the sweep.
 * It takes what differs between deployments as explicit parts (EngineParts): where task records live and who
 * runs them (TaskRecords), and where uploads and task files live (TaskFiles). Each deployment is one small
 * composition that builds its parts and hands them here: embeddedEngine.ts (one process: JSON records, local
 * files), postgresEngine.ts (PostgreSQL records and queue, files in a shared folder or, with s3Objects.ts, a
 * bucket). Each image runs in engine/core's worker threads; the desktop's local upscales call core directly.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Caller, OutputFile, StoredPart, UpscalingEngine } from './api.js';
import {
  errors,
  isContractError,
  type CompleteMultipartUploadResult,
  type TaskRecord,
  type TaskStatusData,
  type UploadSession,
} from '../contract/index.js';
import { parseGetTaskStatus, parseGetUploadUrl } from '../contract/parseRequest.js';
import { createCore, type Core, type FaceJob } from '../core/index.js';
import { UNMETERED, type CreditMeter } from './credits/meter.js';
import { resolveFaceModel } from '../core/faces/faceModels.js';
import type { ExecutionProviderChoice, PrecisionRequest } from '../core/inference/index.js';
import { resolveLimits, type EngineLimits } from './limits.js';
import { listModels as listCatalogModels, modelSearchDirs } from '../core/models/catalog.js';
import { customModelNames, resolveTaskModel, type TaskModelSources } from '../core/models/taskModel.js';
import type { EngineContext, EngineParts } from './parts.js';
import { FetchBudget } from './quotas/fetchBudget.js';
import { assertUploadQuota, type QuotaContext } from './quotas/userQuota.js';
import { priceTask, startTaskOperation } from './startTask.js';
import { KeyedMutex } from './storage/mutex.js';
import { taskSweeper } from './sweep.js';
import { TaskRunner } from './tasks/taskRunner.js';
import type { TaskStats } from './tasks/taskStats.js';
import type { StoredTask } from './tasks/taskTypes.js';
import { toStatusData, toTaskRecord, type DecorateFile } from './tasks/statusView.js';
import { publicMessage } from './tasks/userMessage.js';

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

export type { EngineContext, EngineParts, TaskFiles, TaskRecords } from './parts.js';

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
      const cost = priceTask(meter, task.settings, task.inputs, {
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

  const sweep = taskSweeper({ dataDir, limits, now, meter, tasks, files });
  const startTask = startTaskOperation({
    limits,
    now,
    meter,
    modelSources,
    face,
    quotas,
    fetchBudget,
    tasks,
    files,
    operatorLog: opts.operatorLog,
  });

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
