/**
 * The expiry sweep: uploads past their lifetime, start-task debris, and tasks whose outputs expired —
 * each removed with its reservation released, shared files before the record (a record without files is
 * swept again; files without a record would leak).
 */
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { CreditMeter } from './credits/meter.js';
import type { EngineLimits } from './limits.js';
import type { TaskFiles, TaskRecords } from './parts.js';
import type { TaskStore } from './tasks/taskStore.js';

export interface SweepDeps {
  dataDir: string;
  limits: EngineLimits;
  now: () => number;
  meter: CreditMeter;
  tasks: TaskRecords;
  files: TaskFiles;
}

export function taskSweeper({ dataDir, limits, now, meter, tasks, files }: SweepDeps): () => Promise<void> {
  /**
   * A removed task's charge is never left reserved. Rule (docs/api.md#credits): a charge is settled by the
   * first status poll that sees PROCESSED; a task removed before any such poll (never polled until its
   * files expired) releases its reservation, since the user never received its result. Settled and
   * released charges are left as they are (release is idempotent).
   */
  async function removeTask(id: string): Promise<void> {
    await meter.release(id);
    // Shared files first: a record without files is swept again next time; files without a record would leak.
    await files.remove(id);
    await tasks.store.remove(id);
  }

  async function sweep(): Promise<void> {
    await files.uploads.sweep();
    // Start-task bodies stream into incoming/<id>/ and leave it at once; anything older is crash debris.
    const incoming = path.join(dataDir, 'incoming');
    for (const name of await readdir(incoming).catch(() => [] as string[])) {
      const st = await stat(path.join(incoming, name)).catch(() => undefined);
      if (st && now() - st.mtimeMs > limits.uploadTtlMs)
        await rm(path.join(incoming, name), { recursive: true, force: true });
    }
    const t = now();
    for (const task of [...tasks.store.all()]) {
      const terminal = task.status === 'PROCESSED' || task.status === 'PROCESSING_FAILED';
      const expired =
        task.outputs.length > 0 ? task.outputs.every((f) => t > f.expiresAt) : t > task.updatedAt + limits.fileTtlMs;
      if (terminal && expired) await removeTask(task.id);
    }
    // Tasks finished on other processes are not in this one's memory: the records list them.
    for (const id of await tasks.expiredElsewhere(t)) await removeTask(id);
    // Files that no record names (a start-task cut off between publishing its inputs and inserting its record)
    // are found by listing; only those older than any start-task can take.
    const isKnown = async (id: string) => (await tasks.store.fetch(id)) !== undefined;
    await files.sweepOrphans?.(isKnown, t - limits.uploadTtlMs);
    // The same on this disk: a task folder no record names is what a kill mid start-task left (its inputs
    // written, its record never), with a bucket this process's working copy of it. Only the embedded store's
    // start-up looked for them; with --db nothing did.
    await removeStrayTaskFolders(tasks.store, isKnown, t - limits.uploadTtlMs);
  }

  return sweep;
}

/** The newest modification time in a task folder (itself, its entries and theirs: inputs/0 is two deep). */
async function newestChange(dir: string, depth = 2): Promise<number> {
  const st = await stat(dir).catch(() => undefined);
  if (!st) return Number.POSITIVE_INFINITY;
  let newest = st.mtimeMs;
  if (depth > 0 && st.isDirectory()) {
    for (const name of await readdir(dir).catch(() => [] as string[]))
      newest = Math.max(newest, await newestChange(path.join(dir, name), depth - 1));
  }
  return newest;
}

/**
 * Removes folders under the task store's root that no record names and in which nothing changed since `cutoff`
 * (a start-task still writing its inputs is younger than any upload's lifetime). Answers the ids removed.
 */
async function removeStrayTaskFolders(
  store: TaskStore,
  isKnown: (taskId: string) => Promise<boolean>,
  cutoff: number,
): Promise<string[]> {
  const removed: string[] = [];
  for (const id of await readdir(store.root).catch(() => [] as string[])) {
    let dir: string;
    try {
      dir = store.taskDir(id);
    } catch {
      continue; // not a task id: not ours to remove
    }
    if (await isKnown(id)) continue;
    if ((await newestChange(dir)) > cutoff) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(id);
  }
  return removed;
}
