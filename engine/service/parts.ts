/**
 * What differs between deployments, as the parts a composition builds and hands to assembleEngine (engine.ts):
 * where task records live and who runs them (TaskRecords), where uploads and task files live (TaskFiles).
 */
import type { Caller } from './api.js';
import type { FileData } from '../contract/index.js';
import type { CreditMeter } from './credits/meter.js';
import type { EngineLimits } from './limits.js';
import type { TaskUsage } from './quotas/userQuota.js';
import type { TaskRunner, TaskRunnerDeps } from './tasks/taskRunner.js';
import type { TaskStats } from './tasks/taskStats.js';
import type { TaskStore } from './tasks/taskStore.js';
import type { StoredTask, TaskInput } from './tasks/taskTypes.js';
import type { Uploads } from './uploads/uploadStore.js';

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
  /** Removes shared files of tasks no record knows, older than `cutoff` (found by listing, not by records). */
  sweepOrphans?(isKnown: (taskId: string) => Promise<boolean>, cutoff: number): Promise<string[]>;
  /** Where an output's bytes are served from; undefined when they are gone. */
  locate(file: FileData): Promise<{ path: string; redirect?: string } | undefined>;
}

export interface EngineParts {
  tasks: TaskRecords;
  files: TaskFiles;
}
