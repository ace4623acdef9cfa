/**
 * Issue 41 item 4: a row's progress moves during an image, not only between tiles. Most images are one or two
 * tiles (the tile is sized by a pixel budget) and a model run holds the core's thread for its whole tile, so
 * the bar used to read 0 % for the whole image, then 99 %. The run is held here at a test gate that blocks the
 * core's thread as a long native run would (no timing): the row must keep moving while it is held.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import type { JobItem, ServiceEvent } from '../../app/service/crispService.js';
import { runPoint } from '../../engine/core/testGate.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';
import { createTestGate, type TestGate } from '../helpers/testGate.js';

// 720×576: two tiles at the CPU's default tile budget (512², tiles.ts).
const BARBARA = path.join(IMAGES_DIR, 'set14', 'barbara.png');

describe('a row during a multi-tile image', () => {
  let dir: string;
  let gate: TestGate;
  let svc: ServiceHandle;
  const events: ServiceEvent[] = [];
  beforeAll(async () => {
    dir = await tempDir('crisp-tile-progress-');
    // The engine process and its core threads inherit this process's gate.
    gate = await createTestGate({ inProcess: true });
    const dataDir = path.join(dir, 'app');
    svc = await createService({
      dataDir,
      secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
      modelDirs: [ONNX_DIR],
    });
    svc.subscribe((e) => events.push(e));
    await svc.updateSettings({
      mode: 'local',
      executionProvider: 'cpu',
      model: FAST_MODEL,
      scale: 2,
      format: 'png',
      outputFolder: path.join(dir, 'out'),
    });
  });
  afterAll(async () => {
    await svc?.close();
    await gate.close();
    await removeDir(dir);
  });

  const rowUpdates = (id: string): JobItem[] =>
    events.flatMap((e) => (e.type === 'item' && e.item.id === id && e.item.status === 'running' ? [e.item] : []));
  const distinctPercents = (id: string): number[] => [...new Set(rowUpdates(id).map((i) => i.percent))];

  it('takes ≥ 5 distinct values inside each held model run, monotonic, with an ETA from the first tile', async () => {
    const [item] = await svc.addPaths([BARBARA]);
    await gate.hold(runPoint(0));
    await gate.hold(runPoint(1));
    await svc.start();
    await gate.reached(runPoint(0));
    // The first tile's model run is held (its thread blocked): the row moves on, from the session's known rate.
    await expect
      .poll(() => distinctPercents(item!.id).length, { timeout: 60_000, interval: 50 })
      .toBeGreaterThanOrEqual(5);
    const inFirst = distinctPercents(item!.id);
    expect(Math.max(...inFirst)).toBeLessThan(100);
    // An ETA from the start of the first image, not from its third.
    expect(rowUpdates(item!.id).some((i) => i.etaSeconds !== undefined)).toBe(true);
    await gate.release(runPoint(0));

    await gate.reached(runPoint(1));
    const before = distinctPercents(item!.id).length;
    await expect
      .poll(() => distinctPercents(item!.id).length, { timeout: 60_000, interval: 50 })
      .toBeGreaterThanOrEqual(before + 5);
    await gate.release(runPoint(1));
    await expect.poll(async () => (await svc.getQueue()).running, { timeout: 60_000 }).toBe(false);

    const percents = rowUpdates(item!.id).map((i) => i.percent);
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    const done = (await svc.getQueue()).items[0]!;
    expect([done.status, done.percent, done.outputDimensions]).toEqual(['done', 100, { width: 1440, height: 1152 }]);
    // The bar under the queue moved with the row.
    const batch = events.flatMap((e) => (e.type === 'queue' && e.queue.total === 1 ? [e.queue.percent] : []));
    expect(new Set(batch.filter((p) => p > 0 && p < 100)).size).toBeGreaterThanOrEqual(10);
  });
});
