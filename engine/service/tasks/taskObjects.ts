/**
 * A task's files in object storage (`--storage s3://…`): the API process that accepts a task puts its
 * inputs in the bucket before the task is queued; the worker that claims it downloads them to its own
 * disk, runs, and puts the outputs in the bucket before the task becomes PROCESSED — so a result is
 * visible to every process exactly when it is complete. Keys mirror the data directory's layout, so an
 * output's recorded `path` (`tasks/<id>/outputs/<name>`) is its key.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { waitOutOutage, type ObjectStore } from '../storage/objectStore.js';
import type { TaskStore } from './taskStore.js';
import type { StoredTask, TaskInput } from './taskTypes.js';

/**
 * How long a claimed task waits for its bucket (staging inputs, publishing outputs) before it fails: an outage
 * shorter than this delays the task instead of failing it.
 */
export const OUTAGE_BUDGET_MS = 10 * 60_000;

export function taskPrefix(taskId: string): string {
  return `tasks/${taskId}/`;
}

/** Puts each local input in the bucket and records its key in place of the (API-local) path. */
export async function publishInputs(objects: ObjectStore, taskId: string, inputs: TaskInput[]): Promise<void> {
  for (const [i, input] of inputs.entries()) {
    if (!input.path) continue;
    const key = `${taskPrefix(taskId)}inputs/${i}`;
    await objects.upload(key, input.path);
    input.objectKey = key;
    delete input.path;
  }
}

/**
 * Downloads the task's inputs into this process's task folder (once: a resumed step finds them there), waiting
 * out a bucket outage of up to `budgetMs`.
 */
export async function stageInputs(
  objects: ObjectStore,
  store: TaskStore,
  task: StoredTask,
  budgetMs = OUTAGE_BUDGET_MS,
): Promise<void> {
  for (const input of task.inputs) {
    if (!input.objectKey) continue;
    const local = path.join(store.taskDir(task.id), 'inputs', path.posix.basename(input.objectKey));
    const present = await stat(local).then(
      (s) => s.isFile(),
      () => false,
    );
    const key = input.objectKey;
    if (!present) await waitOutOutage(() => objects.download(key, local), budgetMs);
    input.path = local;
  }
}

/** Puts every output in the bucket under its recorded path, waiting out a bucket outage of up to `budgetMs`. */
export async function publishOutputs(
  objects: ObjectStore,
  store: TaskStore,
  task: StoredTask,
  budgetMs = OUTAGE_BUDGET_MS,
): Promise<void> {
  const root = path.dirname(store.root);
  for (const file of task.outputs) {
    const local = path.join(root, ...file.path.split('/'));
    await waitOutOutage(() => objects.upload(file.path, local, file.fileType), budgetMs);
  }
}

/**
 * Removes the objects of tasks no record knows (`isKnown` false): what an API process killed between putting a
 * task's inputs in the bucket and inserting its record leaves behind, which no record-driven sweep can find.
 * Only tasks whose every object is older than `cutoff` (ms since the epoch) are touched, so a start-task still
 * between the two steps is never raced. Answers the task ids removed.
 */
export async function sweepOrphanTasks(
  objects: ObjectStore,
  isKnown: (taskId: string) => Promise<boolean>,
  cutoff: number,
): Promise<string[]> {
  const newest = new Map<string, number>();
  for (const { key, lastModified } of await objects.listDated('tasks/')) {
    const id = key.split('/')[1];
    if (!id) continue;
    newest.set(id, Math.max(newest.get(id) ?? 0, lastModified));
  }
  const removed: string[] = [];
  for (const [id, at] of newest) {
    if (at >= cutoff || (await isKnown(id))) continue;
    await objects.removePrefix(taskPrefix(id));
    removed.push(id);
  }
  return removed;
}
