/**
 * Projections of a stored task onto the contract's response shapes.
 *
 * get-task-status is polled in a loop, so its projection is built once per state of the task and
 * reused: `toStatusData` answers the same (frozen) object until something it depends on changes —
 * status, progress, the credit fields, outputs, error, warnings, updatedAt — or the decorator says its
 * own output changed (`DecorateFile.validity`, e.g. the hour bucket of a download link's expiry).
 * Callers may cache anything derived from that object (the server caches its JSON) by its identity.
 */
import type { FileData, TaskRecord, TaskStatusData } from '../../contract/index.js';
import type { Balance } from '../credits/meter.js';
import type { StoredTask } from './taskTypes.js';

export interface DecorateFile {
  (task: StoredTask, file: FileData): FileData;
  /**
   * A value that changes whenever this decorator may answer differently for the same task and file
   * (its output depends on the clock). Absent: the output depends on the task and file only.
   */
  validity?: () => number;
}

/** Everything toStatusData reads that can change after a task is created (settings never do). */
interface StatusInputs {
  status: StoredTask['status'];
  progress: number;
  creditsDeducted: boolean;
  deductedCredits: number;
  outputs: FileData[];
  outputCount: number;
  error: string | undefined;
  warnings: string[];
  warningCount: number;
  updatedAt: number;
  validity: number;
  decorate: DecorateFile;
}

const built = new WeakMap<StoredTask, { inputs: StatusInputs; data: TaskStatusData }>();

function inputsOf(task: StoredTask, decorate: DecorateFile): StatusInputs {
  return {
    status: task.status,
    progress: task.progress,
    creditsDeducted: task.creditsDeducted,
    deductedCredits: task.deductedCredits,
    outputs: task.outputs,
    outputCount: task.outputs.length,
    error: task.error,
    warnings: task.warnings,
    warningCount: task.warnings.length,
    updatedAt: task.updatedAt,
    validity: decorate.validity ? decorate.validity() : 0,
    decorate,
  };
}

function sameInputs(a: StatusInputs, task: StoredTask, decorate: DecorateFile): boolean {
  return (
    a.status === task.status &&
    a.progress === task.progress &&
    a.creditsDeducted === task.creditsDeducted &&
    a.deductedCredits === task.deductedCredits &&
    a.outputs === task.outputs &&
    a.outputCount === task.outputs.length &&
    a.error === task.error &&
    a.warnings === task.warnings &&
    a.warningCount === task.warnings.length &&
    a.updatedAt === task.updatedAt &&
    a.decorate === decorate &&
    a.validity === (decorate.validity ? decorate.validity() : 0)
  );
}

/** The status of a task; the same frozen object while nothing it depends on has changed. */
export function toStatusData(task: StoredTask, decorate: DecorateFile): TaskStatusData {
  const hit = built.get(task);
  if (hit && sameInputs(hit.inputs, task, decorate)) return hit.data;
  const inputs = inputsOf(task, decorate);
  const data = buildStatusData(task, decorate);
  for (const f of data.files) Object.freeze(f);
  Object.freeze(data.files);
  if (data.warnings) Object.freeze(data.warnings);
  built.set(task, { inputs, data: Object.freeze(data) });
  return data;
}

/** The status built afresh (what the memoized answer must always equal). */
export function buildStatusData(task: StoredTask, decorate: DecorateFile): TaskStatusData {
  const data: TaskStatusData = {
    status: task.status,
    progress: `${task.progress}%`,
    files: task.status === 'PROCESSED' ? task.outputs.map((f) => decorate(task, f)) : [],
    deductedCredits: task.deductedCredits,
    creditsDeducted: task.creditsDeducted,
    model: task.settings.model,
    scale: task.settings.scale,
    saveImageAs: task.settings.saveImageAs,
    compression: task.settings.compression,
    batchMode: task.batchMode,
  };
  if (task.settings.denoise !== undefined) data.denoise = task.settings.denoise;
  if (task.error !== undefined) data.error = task.error;
  if (task.warnings.length > 0) data.warnings = [...task.warnings];
  // Finite only: a record saved with a NaN (JSON null) must not break the integer in the answer's schema.
  if (Number.isFinite(task.etaSeconds) && (task.status === 'PROCESSING' || task.status === 'ENHANCING'))
    data.etaSeconds = task.etaSeconds;
  return data;
}

export function toTaskRecord(task: StoredTask, balance: Balance, decorate: DecorateFile): TaskRecord {
  return {
    id: task.id,
    userId: task.userId,
    email: task.email,
    files: task.outputs.map((f) => decorate(task, f)),
    filesCount: task.inputs.length,
    enhanceFace: task.settings.enhanceFace,
    model: task.settings.model,
    scale: task.settings.scale,
    saveImageAs: task.settings.saveImageAs,
    compression: task.settings.compression,
    createdAt: task.createdAt,
    status: task.status,
    batchMode: task.batchMode,
    progress: `${task.progress}%`,
    creditsToDeduct: task.creditsToDeduct,
    currentCredits: balance.currentCredits,
    currentExtraCredits: balance.currentExtraCredits,
  };
}
