/**
 * The embedded deployment: one process, task records as JSON files under the data directory, files in it
 * too (localFiles.ts), and this process's runner runs every task. `crisp serve` without `--db`, and in-process
 * callers (tests, tools). Start-up recovers what a crash left: unfinished tasks are resumed from their stored
 * inputs (`resumeInterrupted`, a server) or fail, and charges without a task record are released.
 */
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  assembleEngine,
  GAVE_UP,
  MAX_RESUMES,
  type Engine,
  type EngineContext,
  type EngineOptions,
  type TaskRecords,
} from './engine.js';
import { localFiles } from './localFiles.js';
import { taskUsageIn } from './quotas/userQuota.js';
import { crashPoint } from './tasks/crashPoint.js';
import type { TaskRunner } from './tasks/taskRunner.js';
import { taskStats } from './tasks/taskStats.js';
import { TaskStore } from './tasks/taskStore.js';
import type { StoredTask } from './tasks/taskTypes.js';

export interface EmbeddedEngineOptions extends EngineOptions {
  /** Origin used in presigned part URLs, e.g. `http://127.0.0.1:8787`. In-process use needs none. */
  publicUrl?: string;
  /**
   * Run tasks left unfinished by a crash again at start (`crisp serve`), up to MAX_RESUMES times each,
   * instead of failing them. The app's own job queue retries items itself, so it leaves this off.
   */
  resumeInterrupted?: boolean;
}

const INTERRUPTED = 'Crisp stopped while this task was running. Start it again.';

export function createEmbeddedEngine(opts: EmbeddedEngineOptions): Promise<Engine> {
  return assembleEngine(opts, async (ctx) => ({
    tasks: embeddedRecords(ctx, opts.resumeInterrupted === true),
    files: await localFiles(ctx, { publicUrl: opts.publicUrl, shared: false }),
  }));
}

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

/** JSON records under the data directory, run by this process's runner alone. */
function embeddedRecords(ctx: EngineContext, resumeInterrupted: boolean): TaskRecords {
  const { meter, now } = ctx;
  const store = new TaskStore(ctx.dataDir);
  let runner: TaskRunner | undefined;
  const attached = (): TaskRunner => {
    if (!runner) throw new Error('the task records were used before the engine started');
    return runner;
  };
  return {
    store,
    runsTasks: true,
    async start(r) {
      runner = r;
      // Anything unfinished at start-up was running (or waiting) when the process died: it is resumed from
      // its stored inputs (server) or fails (app), and never hangs. Either way the killed run may have left a
      // temp file mid-write, so partial outputs go.
      const resumable: StoredTask[] = [];
      for (const task of await store.load()) {
        task.outputs = [];
        await rm(path.join(store.taskDir(task.id), 'outputs'), { recursive: true, force: true });
        task.updatedAt = now();
        task.resumes = (task.resumes ?? 0) + 1;
        const canResume = resumeInterrupted && task.resumes <= MAX_RESUMES && (await inputsPresent(task));
        if (canResume) {
          task.status = 'PROCESSING';
          await store.save(task);
          resumable.push(task);
          continue;
        }
        task.status = 'PROCESSING_FAILED';
        task.error = resumeInterrupted && task.resumes > MAX_RESUMES ? GAVE_UP : INTERRUPTED;
        await store.save(task);
        await meter.release(task.id);
      }
      // The JSON records cannot take a charge and a task in one step: a kill between start-task's
      // reservation and its task record leaves a charge without a task (and a folder without a record, which
      // store.load() removed). Every such charge is released here, before anything new is reserved.
      if (meter.reservedTaskIds) {
        for (const id of await meter.reservedTaskIds()) if (!store.get(id)) await meter.release(id);
      }
      // Oldest first, so resumed tasks keep their place ahead of anything submitted after the restart.
      return resumable.sort((a, b) => a.createdAt - b.createdAt);
    },
    async insert(task, caller, cost) {
      await meter.reserve(caller, task.id, cost);
      try {
        // A kill here leaves a charge without a task record: the next start-up releases it (above).
        crashPoint('start-task:reserved');
        await store.save(task);
      } catch (e) {
        await meter.release(task.id);
        throw e;
      }
    },
    submit: (task) => attached().enqueue(task),
    activeTasksOf: (userId) => attached().activeTasksOf(userId),
    taskUsageOf: (userId) => taskUsageIn(store.all(), userId, now()),
    stats: async () => taskStats(store.all()),
    // Every task this deployment has is in this process's memory, where the sweep looks first.
    expiredElsewhere: async () => [],
    close: () => attached().close(),
  };
}
