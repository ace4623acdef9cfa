/** Creates engines on temporary data directories with the real models, and polls tasks to the end. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LOCAL_CALLER, type Caller } from '../../engine/service/api.js';
import { isContractError, type ContractError, type TaskStatusData } from '../../engine/contract/index.js';
import { expect } from 'vitest';
import { createEmbeddedEngine, type EmbeddedEngineOptions } from '../../engine/service/embeddedEngine.js';
import type { Engine } from '../../engine/service/engine.js';
import { ONNX_DIR } from './paths.js';

export const FAST_MODEL = 'digital-art-4x';

export async function tempDir(prefix = 'crisp-test-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** An embedded engine (one process, JSON records, local files), as `crisp serve` without --db runs. */
export async function makeEngine(opts: Partial<EmbeddedEngineOptions> = {}): Promise<Engine> {
  return createEmbeddedEngine({
    dataDir: opts.dataDir ?? (await tempDir()),
    modelDirs: [ONNX_DIR],
    executionProvider: 'cpu',
    sweepIntervalMs: 0,
    ...opts,
  });
}

export async function waitForTask(
  engine: Engine,
  taskId: string,
  caller: Caller = LOCAL_CALLER,
  onStatus?: (s: TaskStatusData) => void,
  timeoutMs = 60_000,
): Promise<TaskStatusData> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await engine.getTaskStatus(caller, { data: { taskId } });
    onStatus?.(s);
    if (s.status === 'PROCESSED' || s.status === 'PROCESSING_FAILED') return s;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${s.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every file below dir (relative paths), to prove nothing partial or temporary was left behind. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  await walk(dir);
  return out.sort();
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Awaits a call that must be refused, and answers the ContractError it was refused with. */
export async function contractRefusal(p: Promise<unknown>): Promise<ContractError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isContractError(e)).toBe(true);
  return e as ContractError;
}
