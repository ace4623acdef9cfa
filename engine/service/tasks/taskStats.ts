/**
 * Operator figures derived from the task records the engine already keeps (no second bookkeeping that
 * could drift): tasks by status, how many wait or run, how long finished tasks took, credits charged.
 */
import { TASK_STATUSES, type TaskStatus } from '../../contract/index.js';
import type { StoredTask } from './taskTypes.js';

export interface TaskStats {
  byStatus: Record<TaskStatus, number>;
  /** Tasks accepted and not yet finished (queued or running). */
  unfinished: number;
  /** Start-to-finish seconds of PROCESSED tasks: count and sum (a Prometheus summary without quantiles). */
  processedSeconds: { count: number; sum: number };
  creditsCharged: number;
}

export function taskStats(tasks: Iterable<StoredTask>): TaskStats {
  const byStatus = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
  const processedSeconds = { count: 0, sum: 0 };
  let creditsCharged = 0;
  for (const t of tasks) {
    byStatus[t.status] += 1;
    if (t.status === 'PROCESSED') {
      processedSeconds.count += 1;
      processedSeconds.sum += Math.max(0, t.updatedAt - t.createdAt) / 1000;
    }
    if (t.creditsDeducted) creditsCharged += t.deductedCredits;
  }
  return { byStatus, unfinished: byStatus.PROCESSING + byStatus.ENHANCING, processedSeconds, creditsCharged };
}
