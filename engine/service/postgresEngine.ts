/**
 * The PostgreSQL deployment (`--db`): task records are rows of the `tasks` table, start-task only inserts
 * one (in the same transaction as its credit reservation), and `queue.workers` tasks at a time are claimed
 * (`FOR UPDATE SKIP LOCKED`) and run here under a heartbeated lease; 0 workers: this process only serves the
 * API. Files live in a directory every process shares (`--storage DIR`, localFiles.ts) or in a bucket
 * (`--storage s3://…`, s3Objects.ts). `crisp serve --db` and `crisp worker`.
 */
import {
  assembleEngine,
  GAVE_UP,
  type Engine,
  type EngineContext,
  type EngineOptions,
  type TaskRecords,
} from './engine.js';
import { localFiles } from './localFiles.js';
import { s3Objects } from './s3Objects.js';
import type { ObjectStore } from './storage/objectStore.js';
import { crashPoint } from './tasks/crashPoint.js';
import { PgTaskStore } from './tasks/pgTaskStore.js';
import { QueueWorker, type QueueOptions } from './tasks/queueWorker.js';

export interface PostgresEngineOptions extends EngineOptions {
  /** The pool, how many tasks this process runs at once, and the lease. */
  queue: QueueOptions;
  /**
   * Uploads, task inputs and outputs in a bucket instead of dataDir, which then only holds this process's
   * working copies. Absent: dataDir is the directory every process shares.
   */
  objects?: ObjectStore;
  /** Origin used in presigned part URLs (shared-directory uploads; a bucket presigns its own). */
  publicUrl?: string;
}

export function createPostgresEngine(opts: PostgresEngineOptions): Promise<Engine> {
  return assembleEngine(opts, async (ctx) => {
    const tasks = postgresRecords(ctx, opts.queue);
    const files = opts.objects
      ? s3Objects(ctx, opts.objects, tasks.store, opts.queue.pool)
      : await localFiles(ctx, { publicUrl: opts.publicUrl, shared: true });
    return { tasks, files };
  });
}

/** The `tasks` table and this process's queue worker, which claims rows and hands them to the runner. */
function postgresRecords(ctx: EngineContext, queue: QueueOptions): TaskRecords & { store: PgTaskStore } {
  const { meter, now } = ctx;
  const store = new PgTaskStore(ctx.dataDir, queue.pool, ctx.limits.fileTtlMs, now);
  let worker: QueueWorker | undefined;
  return {
    store,
    runsTasks: queue.workers > 0,
    runnerHooks: {
      owns: (task) => worker?.owns(task) ?? false,
      confirmOwnership: (task) => store.confirmHeld(task.id),
      onEnded: (task) => worker?.ended(task),
    },
    async start(runner) {
      worker = new QueueWorker(queue, {
        store,
        runner,
        now,
        release: (id) => meter.release(id),
        gaveUpMessage: GAVE_UP,
      });
      worker.start();
      // Nothing to resume here: an unfinished task is a row, claimed again by a worker once its lease expires.
      return [];
    },
    async insert(task, caller, cost) {
      if (meter.reserveWith) {
        // One transaction: the charge and the task row exist together or not at all.
        await meter.reserveWith(caller, task.id, cost, async (db) => {
          crashPoint('start-task:reserved');
          await store.insertNew(db, task);
        });
        return;
      }
      await meter.reserve(caller, task.id, cost);
      try {
        await store.save(task);
      } catch (e) {
        await meter.release(task.id);
        throw e;
      }
    },
    // Queued: a worker (this process's or another's) claims the row.
    submit: () => worker?.poke(),
    // A user's tasks wait, run and finish on any process: the database counts them all.
    activeTasksOf: (userId) => store.activeCount(userId),
    taskUsageOf: (userId) => store.usageOf(userId, now()),
    stats: () => store.stats(),
    expiredElsewhere: (t) => store.expiredTerminal(t, ctx.limits.fileTtlMs),
    // Running tasks are handed back (their rows unlocked); the worker closes the runner.
    close: async () => {
      await worker?.close();
    },
  };
}
