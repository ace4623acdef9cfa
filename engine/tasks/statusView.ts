/** Projections of a stored task onto the contract's response shapes. */
import type { FileData, TaskRecord, TaskStatusData } from '../contract/index.js';
import type { Balance } from '../credits/meter.js';
import type { StoredTask } from './taskTypes.js';

export type DecorateFile = (task: StoredTask, file: FileData) => FileData;

export function toStatusData(task: StoredTask, decorate: DecorateFile): TaskStatusData {
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
  if (task.etaSeconds !== undefined && (task.status === 'PROCESSING' || task.status === 'ENHANCING')) data.etaSeconds = task.etaSeconds;
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
