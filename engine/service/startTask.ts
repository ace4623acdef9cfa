/**
 * start-task, the contract's one operation that takes money and work: the request checked (model names,
 * faces, quotas, what the caller can afford), inputs read and priced by their headers, the record saved with
 * its reservation in one step, then handed to whoever runs it. Anything that fails before the record stands
 * leaves no reservation and no files.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Caller, StartTaskInput } from './api.js';
import {
  errors,
  hasErrorCode,
  isContractError,
  type StartTaskRequest,
  type StartTaskResult,
} from '../contract/index.js';
import { parseStartTask } from '../contract/parseRequest.js';
import { checkImageFits, checkRequest, type CheckedRequest } from '../core/checkJob.js';
import type { FaceJob } from '../core/index.js';
import type { TaskModelSources } from '../core/models/taskModel.js';
import { isImageInputError } from '../core/pipeline/index.js';
import { holdPoint } from '../core/testGate.js';
import type { CreditMeter } from './credits/meter.js';
import { outputSizeOf } from './credits/priceTable.js';
import type { EngineLimits } from './limits.js';
import type { TaskFiles, TaskRecords } from './parts.js';
import type { FetchBudget } from './quotas/fetchBudget.js';
import { assertTaskQuota, type QuotaContext } from './quotas/userQuota.js';
import { materializeInputs } from './tasks/taskInputs.js';
import type { StoredTask } from './tasks/taskTypes.js';
import { publicError, publicMessage } from './tasks/userMessage.js';

/** A task's price: by output size and by the pixels the model produces (docs/api.md#prices). */
export const priceTask = (
  meter: CreditMeter,
  settings: StoredTask['settings'],
  inputs: readonly { dimensions?: { width: number; height: number } }[],
  work: { nativeScale: number; passes?: number },
) =>
  meter.quote(
    settings,
    inputs.map((i) => (i.dimensions ? outputSizeOf(i.dimensions, settings.scale, work) : undefined)),
  );

/** Why an abandoned start-task saved nothing (nobody reads the answer; the operator's log does). */
const ABANDONED = 'the connection closed before the task was saved; nothing was reserved or kept';

export interface StartTaskDeps {
  limits: EngineLimits;
  now: () => number;
  meter: CreditMeter;
  modelSources: TaskModelSources;
  /** The deployment's face setting; absent, enhanceFace is refused before anything is charged. */
  face: FaceJob | undefined;
  quotas: QuotaContext;
  fetchBudget: FetchBudget;
  tasks: TaskRecords;
  files: TaskFiles;
  /** Set by a server: answers carry no path; the detail goes here (EngineOptions.operatorLog). */
  operatorLog: ((detail: string) => void) | undefined;
}

export function startTaskOperation(
  deps: StartTaskDeps,
): (caller: Caller, input: StartTaskInput) => Promise<StartTaskResult> {
  const { limits, now, meter, modelSources, face, quotas, fetchBudget, tasks, files, operatorLog } = deps;
  return async function startTask(caller: Caller, input: StartTaskInput): Promise<StartTaskResult> {
    // The one request check (core's checkJob): names, fields and sources, faces, the model's files, a pre-model.
    let checked: CheckedRequest<StartTaskRequest>;
    try {
      checked = await checkRequest(
        { fields: input.fields, passes: input.passes, preModel: input.preModel, metadata: input.metadata },
        modelSources,
        (fields, options) => parseStartTask(fields, input.file, { maxFilesPerTask: limits.maxFilesPerTask }, options),
        (r) => {
          if (r.enhanceFace && !face) throw errors.faceNotAvailable();
        },
      );
    } catch (e) {
      // A model missing on a server is the caller's 400 (its install command is the operator's detail).
      if (hasErrorCode(e, 'model-not-installed'))
        throw errors.badRequest(operatorLog ? publicMessage(e, undefined, operatorLog) : e.message);
      throw e;
    }
    const { request: req, nativeScale, choices } = checked;
    const preModel = choices.preModel;
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
      // Double upscale: refused from the headers, before any pass, when the result would exceed the limits.
      for (const i of inputs) {
        if (!i.dimensions) continue;
        try {
          checkImageFits(i.dimensions, choices, i.originalFileName, limits);
        } catch (e) {
          if (isImageInputError(e)) throw errors.badRequest(e.message);
          throw e;
        }
      }
      cost = priceTask(meter, req, inputs, { nativeScale, ...(choices.passes === 2 ? { passes: 2 } : {}) });
      // Taken before the task exists: a refusal here (429) must not leave a saved task behind.
      if (req.source === 'urls') fetchBudget.take(caller.userId, req.urls.length);
      // Whichever worker claims the task reads its inputs from where every process can (a bucket).
      await files.publishInputs?.(id, inputs);
      // Test-only (CRISP_TEST_GATE_DIR; a no-op in production): a request held with its inputs read, unsaved.
      await holdPoint('start-task-save');
      if (input.signal?.aborted) throw errors.requestTimeout(ABANDONED);
      const t = now();
      const task: StoredTask = {
        id,
        userId: caller.userId,
        email: caller.email,
        settings: choices.settings,
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
        ...(choices.passes === 2 ? { passes: 2 as const } : {}),
        ...(preModel ? { preModel } : {}),
        ...(choices.metadata ? { metadata: choices.metadata } : {}),
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
      if (isContractError(e)) throw operatorLog ? publicError(e, operatorLog) : e;
      throw errors.serverFailure('start-task');
    }
    return { message: 'Task started', taskId: id, creditsToDeduct: cost };
  };
}
