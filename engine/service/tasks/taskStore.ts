/**
 * Tasks persist as one JSON file each under <data>/tasks/<id>/task.json (written atomically), with their
 * inputs and outputs beside it, so a restart finds every finished task and its files.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { readJson, writeJsonAtomic } from '../storage/atomicFile.js';
import type { StoredTask } from './taskTypes.js';

const ID_PATTERN = /^[0-9a-f-]{36}$/;

export class TaskStore {
  protected readonly tasks = new Map<string, StoredTask>();
  readonly root: string;

  constructor(dataDir: string) {
    this.root = path.join(dataDir, 'tasks');
  }

  taskDir(id: string): string {
    if (!ID_PATTERN.test(id)) throw new Error(`invalid task id ${id}`);
    return path.join(this.root, id);
  }

  /**
   * Loads every task; returns those that were unfinished (the process died while they ran or waited).
   * A task folder without a task.json is what a kill during start-task leaves (inputs written, record
   * not yet): no task exists, so the folder goes (its reservation is released by the engine's reconciliation).
   */
  async load(): Promise<StoredTask[]> {
    const ids = await readdir(this.root).catch(() => [] as string[]);
    const unfinished: StoredTask[] = [];
    for (const id of ids) {
      if (!ID_PATTERN.test(id)) continue;
      let t: StoredTask | undefined;
      try {
        t = await readJson<StoredTask>(path.join(this.root, id, 'task.json'));
      } catch {
        continue; // unreadable, not missing: left for the operator to look at
      }
      if (!t) {
        await rm(path.join(this.root, id), { recursive: true, force: true });
        continue;
      }
      this.tasks.set(t.id, t);
      if (t.status !== 'PROCESSED' && t.status !== 'PROCESSING_FAILED') unfinished.push(t);
    }
    return unfinished;
  }

  get(id: string): StoredTask | undefined {
    return this.tasks.get(id);
  }

  /** The current record, wherever it is kept (PgTaskStore reads the database: another process may run it). */
  async fetch(id: string): Promise<StoredTask | undefined> {
    return this.tasks.get(id);
  }

  all(): IterableIterator<StoredTask> {
    return this.tasks.values();
  }

  async save(task: StoredTask): Promise<void> {
    this.tasks.set(task.id, task);
    await writeJsonAtomic(path.join(this.taskDir(task.id), 'task.json'), task);
  }

  async remove(id: string): Promise<void> {
    this.tasks.delete(id);
    await rm(this.taskDir(id), { recursive: true, force: true });
  }
}
