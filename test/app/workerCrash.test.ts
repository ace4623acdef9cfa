import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend, type LocalBackend } from '../../app/backends/local/localBackend.js';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import { FAST_MODEL, listFiles, removeDir, tempDir } from '../helpers/engineHarness.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { createTestGate, inputPoint, type TestGate } from '../helpers/testGate.js';
import { makeBatch } from './appHelpers.js';

describe('the local engine worker killed mid-item', () => {
  let dir: string;
  let local: LocalBackend;
  let gate: TestGate;
  beforeAll(async () => {
    dir = await tempDir('crisp-app-crash-');
    // The engine processes inherit the test gate from this process.
    gate = await createTestGate({ inProcess: true });
    local = createLocalBackend({
      dataDir: path.join(dir, 'engine'),
      modelDirs: [ONNX_DIR],
      executionProvider: 'cpu',
      tileSize: 48,
    });
  });
  afterAll(async () => {
    await local.close();
    await removeDir(dir);
    await gate.close();
  });

  it('fails that item with a clear message; the next item runs on a fresh worker', async () => {
    const inputs = path.join(dir, 'in');
    const out = path.join(dir, 'out');
    await mkdir(inputs);
    await makeBatch(inputs, 3);
    const pids: (number | undefined)[] = [];
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => ({
        model: FAST_MODEL,
        scale: 2,
        format: 'png',
        compression: 0,
        face: false,
        outputFolder: out,
        template: '{name}.{ext}',
        overwrite: 'replace',
      }),
      onEvent: (e) => {
        if (e.type === 'item' && e.item.status === 'running') pids.push(local.workerPid());
      },
    });
    await queue.addPaths([inputs]);
    // The second image is held in the engine process (test gate) and killed there: mid-item, whatever the speed.
    const second = inputPoint('img02_bird_LRBI_x4.png');
    await gate.hold(second);
    await queue.start();
    const pid = await gate.reached(second);
    expect(pid).toBe(local.workerPid());
    process.kill(pid, 'SIGKILL'); // what an OOM kill or a native crash looks like from outside
    await queue.idle();
    await gate.release(second);

    const items = queue.snapshot().items;
    expect(items.map((i) => i.status)).toEqual(['done', 'failed', 'done']);
    expect(items[1]!.error).toMatch(
      /^The local engine stopped unexpectedly while upscaling img02_bird_LRBI_x4\.png \(it was stopped by SIGKILL;/,
    );
    expect(items[1]!.error).toContain('The next image starts a fresh engine.');
    const first = pids[0];
    const last = pids.at(-1);
    expect(first).toBeDefined();
    expect(last).toBeDefined();
    expect(last).not.toBe(first);
    expect(local.workerPid()).toBe(last);
    expect(await listFiles(out)).toEqual(['img01_baby_LRBI_x4.png', 'img03_butterfly_LRBI_x4.png']);

    // retrying the failed item now works on the fresh worker
    await queue.retry(items[1]!.id);
    await queue.idle();
    expect(queue.snapshot().items[1]!.status).toBe('done');
  });
});
