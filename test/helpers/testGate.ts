/**
 * The test side of engine/core/testGate.ts: hold work at a named point, wait until it is there, release it.
 * Every wait is bounded (a hang fails the test); nothing here depends on how fast the machine is.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_GATE_ENV } from '../../engine/core/testGate.js';

export interface TestGate {
  dir: string;
  /** Environment for a child process (or this one) that should honour the gate. */
  env: NodeJS.ProcessEnv;
  /** Asks the work to stop at `point` when it gets there. */
  hold(point: string): Promise<void>;
  /** Waits until some process is held at `point`; answers that process's pid. */
  reached(point: string, timeoutMs?: number): Promise<number>;
  /** Lets the work at `point` go on (a later arrival passes straight through unless held again). */
  release(point: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * `inProcess`: this process honours the gate too (an in-process engine or server, and the engine processes it
 * starts, which inherit the environment) until close().
 */
export async function createTestGate(opts: { inProcess?: boolean } = {}): Promise<TestGate> {
  const dir = await mkdtemp(path.join(tmpdir(), 'crisp-gate-'));
  if (opts.inProcess) process.env[TEST_GATE_ENV] = dir;
  const file = (point: string, kind: 'hold' | 'reached') => path.join(dir, `${point}.${kind}`);
  return {
    dir,
    env: { ...process.env, [TEST_GATE_ENV]: dir },
    hold: (point) => writeFile(file(point, 'hold'), randomUUID()),
    async reached(point, timeoutMs = 90_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const pid = await readFile(file(point, 'reached'), 'utf8').catch(() => '');
        if (pid) return Number(pid);
        if (Date.now() > end) throw new Error(`the work never reached the test gate "${point}"`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async release(point) {
      // `reached` first: a later `reached(point)` then waits for the next arrival, not this one.
      await rm(file(point, 'reached'), { force: true });
      await rm(file(point, 'hold'), { force: true });
    },
    async close() {
      if (process.env[TEST_GATE_ENV] === dir) delete process.env[TEST_GATE_ENV];
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The points the task runner holds at before image `index` (0-based): of one task, or of any task (for work
 * the test cannot name before it starts).
 */
export const imagePoint = (taskId: string, index: number): string => `task-${taskId}-image-${index}`;
export const anyImagePoint = (index: number): string => `image-${index}`;
/** The point core holds at as a job for an input with this file name starts (any task, any local job). */
export { inputPoint } from '../../engine/core/testGate.js';
