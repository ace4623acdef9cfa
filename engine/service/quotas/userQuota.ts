/**
 * Per-user quota checks at the two doors where a user makes the server hold something: get-upload-url
 * (open uploads, stored bytes) and start-task (tasks at once, outputs, stored bytes). Refusals are 400s
 * (429 for the task cap, which clears by itself) that say what is full and what to do.
 */
import type { Caller } from '../api.js';
import { CrispError, errors } from '../../contract/index.js';
import type { EngineLimits } from '../limits.js';
import type { StoredTask } from '../tasks/taskTypes.js';
import type { UploadUsage } from './uploadUsage.js';

type QuotaLimits = Pick<
  EngineLimits,
  'maxOpenUploadsPerUser' | 'maxStoredBytesPerUser' | 'maxOutputsPerUser' | 'maxTasksPerUser'
>;

export interface TaskUsage {
  /** Output files a user's tasks hold or will hold (a queued or running task counts one per input). */
  outputs: number;
  /** Bytes of those outputs that exist. */
  bytes: number;
}

export interface QuotaContext {
  limits: QuotaLimits;
  /** What a user's upload sessions hold (in the data directory, or with a bucket from its index). */
  uploadUsageOf: (userId: string) => Promise<UploadUsage>;
  /** Tasks of a user waiting or running: in this process, or with a queue in the database (every process). */
  activeTasksOf: (userId: string) => number | Promise<number>;
  /** Outputs of a user's tasks: `taskUsageIn` over this process's tasks, or with a queue from the database. */
  taskUsageOf: (userId: string) => TaskUsage | Promise<TaskUsage>;
  now: () => number;
}

const mib = (n: number) => `${Math.ceil(n / 1048576)} MiB`;

/** Outputs (count, bytes) of a user's tasks that still hold or will hold files (PgTaskStore.usageOf is the same in SQL). */
export function taskUsageIn(tasks: Iterable<StoredTask>, userId: string, t: number): TaskUsage {
  let outputs = 0;
  let bytes = 0;
  for (const task of tasks) {
    if (task.userId !== userId || task.status === 'PROCESSING_FAILED') continue;
    if (task.status === 'PROCESSED') {
      for (const f of task.outputs) {
        if (t > f.expiresAt) continue;
        outputs++;
        bytes += f.fileSize;
      }
    } else {
      outputs += task.inputs.length;
    }
  }
  return { outputs, bytes };
}

export async function assertUploadQuota(ctx: QuotaContext, caller: Caller, fileSize: number): Promise<void> {
  const { limits } = ctx;
  if (!Number.isFinite(limits.maxOpenUploadsPerUser) && !Number.isFinite(limits.maxStoredBytesPerUser)) return;
  const up = await ctx.uploadUsageOf(caller.userId);
  if (up.openUploads >= limits.maxOpenUploadsPerUser) {
    throw errors.badRequest(
      `you have ${up.openUploads} unfinished uploads; the limit is ${limits.maxOpenUploadsPerUser}. Complete them (complete-multipart-upload) or wait for them to expire`,
    );
  }
  const held = up.bytes + (await ctx.taskUsageOf(caller.userId)).bytes;
  if (held + fileSize > limits.maxStoredBytesPerUser) {
    throw errors.badRequest(
      `this upload of ${mib(fileSize)} would bring your stored files to ${mib(held + fileSize)}; the limit is ${mib(limits.maxStoredBytesPerUser)}. Wait for older uploads and outputs to expire`,
    );
  }
}

export async function assertTaskQuota(ctx: QuotaContext, caller: Caller, imageCount: number): Promise<void> {
  const { limits } = ctx;
  const active = await ctx.activeTasksOf(caller.userId);
  if (active >= limits.maxTasksPerUser) {
    throw new CrispError(
      'rate-limited',
      `Too Many Requests: you have ${active} tasks waiting or running; the limit is ${limits.maxTasksPerUser}. Start this one when one of them has finished`,
    );
  }
  if (!Number.isFinite(limits.maxOutputsPerUser) && !Number.isFinite(limits.maxStoredBytesPerUser)) return;
  const use = await ctx.taskUsageOf(caller.userId);
  if (use.outputs + imageCount > limits.maxOutputsPerUser) {
    throw errors.badRequest(
      `your tasks hold ${use.outputs} output files and this one adds ${imageCount}; the limit is ${limits.maxOutputsPerUser}. Wait for older outputs to expire`,
    );
  }
  if (use.bytes >= limits.maxStoredBytesPerUser) {
    throw errors.badRequest(
      `your outputs take ${mib(use.bytes)}; the limit is ${mib(limits.maxStoredBytesPerUser)}. Wait for older outputs to expire`,
    );
  }
}
