import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import { listFiles } from '../helpers/engineHarness.js';
import { inputPoint } from '../helpers/testGate.js';
import { makeBatch } from './appHelpers.js';
import { pngSettings, useGatedEngine } from './gatedEngine.js';

describe('the local engine worker killed mid-item', () => {
  const engine = useGatedEngine('crisp-app-crash-', 48);

  it('fails that item with a clear message; the next item runs on a fresh worker', async () => {
    const { dir, local, gate } = engine;
    const inputs = path.join(dir, 'in');
    const out = path.join(dir, 'out');
    await mkdir(inputs);
    await makeBatch(inputs, 3);
    const pids: (number | undefined)[] = [];
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => pngSettings(out, '{name}.{ext}', 'replace'),
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
