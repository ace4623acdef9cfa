/**
 * Temporary rasters of a streamed job. They are named `.crisp-raster-<pid>-<random>.<ext>` so that
 *   - the job removes its own in a finally (success, failure, cancel, Ctrl-C through the abort signal);
 *   - a process that exits without unwinding (process.exit) still removes them, synchronously, on 'exit';
 *   - one killed outright (SIGKILL, power loss) leaves files whose pid is dead, and the next streamed job
 *     in that folder sweeps them before it starts (the engine also drops unfinished tasks' folders).
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

const PREFIX = '.crisp-raster-';
const live = new Set<string>();
let exitHook = false;

export function tempRasterPath(dir: string, ext: string): string {
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const f of live) rmSync(f, { force: true });
    });
  }
  const file = path.join(dir, `${PREFIX}${process.pid}-${randomBytes(6).toString('hex')}${ext}`);
  live.add(file);
  return file;
}

export async function removeTemp(file: string): Promise<void> {
  await rm(file, { force: true });
  live.delete(file);
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes temp rasters left in `dir` by processes that no longer run; answers the removed paths. */
export async function sweepStaleTemps(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = /^\.crisp-raster-(\d+)-[0-9a-f]+\.\w+$/.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    const file = path.join(dir, name);
    await rm(file, { force: true }).catch(() => undefined);
    removed.push(file);
  }
  return removed;
}
