import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import { MAX_RESUMES } from '../../engine/service/engine.js';
import type { StoredTask } from '../../engine/service/tasks/taskTypes.js';
import { FAST_MODEL, listFiles, makeEngine, removeDir, tempDir, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR, REPO_ROOT } from '../helpers/paths.js';
import { createTestGate } from '../helpers/testGate.js';

/**
 * Starts a task in a child engine process and SIGKILLs it while the task runs (held by the test gate before
 * its second tile, whatever the machine's speed); returns the task id.
 */
async function killMidTask(dataDir: string, scratch: string): Promise<string> {
  const gate = await createTestGate();
  await gate.hold('tile-1');
  const image = path.join(scratch, 'big.png');
  await sharp(path.join(IMAGES_DIR, 'set5/baby.png')).toFile(image);
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/engineHost.ts', dataDir, image], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: gate.env,
  });
  const taskId = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /RUNNING ([0-9a-f-]{36})/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.on('exit', (code) => reject(new Error(`engine host exited early (${code})`)));
  });
  expect(await gate.reached('tile-1')).toBe(child.pid);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  await gate.close();
  return taskId;
}

describe('engine process killed while a task runs', () => {
  const dirs: string[] = [];
  /** A fresh data dir and scratch dir per test: each test kills its own engine host. */
  async function dirsForTest(): Promise<{ dataDir: string; scratch: string }> {
    const d = { dataDir: await tempDir(), scratch: await tempDir() };
    dirs.push(d.dataDir, d.scratch);
    return d;
  }
  afterAll(async () => {
    for (const d of dirs) await removeDir(d);
  });

  it('reports PROCESSING_FAILED after a restart, and a new task succeeds', async () => {
    const { dataDir, scratch } = await dirsForTest();
    const taskId = await killMidTask(dataDir, scratch);
    const engine = await makeEngine({ dataDir });
    try {
      const s = await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId } });
      expect(s.status).toBe('PROCESSING_FAILED');
      expect(s.error).toBe('Crisp stopped while this task was running. Start it again.');
      expect(s.files).toEqual([]);
      // no half-written output or temp file survives the kill's aftermath
      expect((await listFiles(path.join(dataDir, 'tasks', taskId))).filter((f) => f.startsWith('outputs'))).toEqual([]);

      const r = await engine.startTask(LOCAL_CALLER, {
        fields: { model: FAST_MODEL, scale: 2, saveImageAs: 'jpg', enhanceFace: false },
        file: [{ originalFileName: 'bird.png', data: { path: path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png') } }],
      });
      const ok = await waitForTask(engine, r.taskId);
      expect(ok.status).toBe('PROCESSED');
      expect(ok.files[0]!.dimensions).toEqual({ width: 144, height: 144 });
    } finally {
      await engine.close();
    }
  });
  it('with resumeInterrupted (crisp serve): runs the task again from its stored input; gives up after MAX_RESUMES start-ups', async () => {
    const { dataDir, scratch } = await dirsForTest();
    const taskId = await killMidTask(dataDir, scratch);
    const engine = await makeEngine({ dataDir, resumeInterrupted: true });
    try {
      const done = await waitForTask(engine, taskId);
      expect(done.status).toBe('PROCESSED');
      expect(done.files).toHaveLength(1);
      const meta = await sharp(path.join(dataDir, 'tasks', taskId, 'outputs', done.files[0]!.fileName)).metadata();
      expect({ width: meta.width, height: meta.height }).toEqual(done.files[0]!.dimensions);
    } finally {
      await engine.close();
    }

    // A task found unfinished at MAX_RESUMES start-ups already is probably what kills the process.
    const second = await killMidTask(dataDir, scratch);
    const file = path.join(dataDir, 'tasks', second, 'task.json');
    const stored = JSON.parse(await readFile(file, 'utf8')) as StoredTask;
    await writeFile(file, JSON.stringify({ ...stored, resumes: MAX_RESUMES }));
    const again = await makeEngine({ dataDir, resumeInterrupted: true });
    try {
      const s = await again.getTaskStatus(LOCAL_CALLER, { data: { taskId: second } });
      expect(s.status).toBe('PROCESSING_FAILED');
      expect(s.error).toBe(
        `Crisp stopped ${MAX_RESUMES} times while this task was running, so it was not tried again. Start it again, or try a smaller image.`,
      );
    } finally {
      await again.close();
    }
  });
});
