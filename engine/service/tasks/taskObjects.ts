/**
 * A task's files in object storage (`--storage s3://…`): the API process that accepts a task puts its
 * inputs in the bucket before the task is queued; the worker that claims it downloads them to its own
 * disk, runs, and puts the outputs in the bucket before the task becomes PROCESSED — so a result is
 * visible to every process exactly when it is complete. Keys mirror the data directory's layout, so an
 * output's recorded `path` (`tasks/<id>/outputs/<name>`) is its key.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { ObjectStore } from '../storage/objectStore.js';
import type { TaskStore } from './taskStore.js';
import type { StoredTask, TaskInput } from './taskTypes.js';

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

/** Downloads the task's inputs into this process's task folder (once: a resumed step finds them there). */
export async function stageInputs(objects: ObjectStore, store: TaskStore, task: StoredTask): Promise<void> {
  for (const input of task.inputs) {
    if (!input.objectKey) continue;
    const local = path.join(store.taskDir(task.id), 'inputs', path.posix.basename(input.objectKey));
    const present = await stat(local).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!present) await objects.download(input.objectKey, local);
    input.path = local;
  }
}

/** Puts every output in the bucket under its recorded path. */
export async function publishOutputs(objects: ObjectStore, store: TaskStore, task: StoredTask): Promise<void> {
  const root = path.dirname(store.root);
  for (const file of task.outputs) {
    await objects.upload(file.path, path.join(root, ...file.path.split('/')), file.fileType);
  }
}
