import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobQueue, type JobSettings } from '../../app/jobs/jobQueue.js';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import type { QueueSnapshot, ServiceEvent } from '../../app/service/crispService.js';
import { listFiles } from '../helpers/engineHarness.js';
import { anyImagePoint, inputPoint } from '../helpers/testGate.js';
import type { TestServer } from '../server/helpers.js';
import { addUser, FAST_POLL, makeBatch, startServer } from './appHelpers.js';
import { pngSettings, useGatedEngine } from './gatedEngine.js';

describe('a batch of 20 images', () => {
  // Small tiles: a cancel is honoured between tiles, so the tile bounds how long a cancel takes.
  const engine = useGatedEngine('crisp-app-batch-', 48);
  const inputs = (): string => path.join(engine.dir, 'in');
  beforeAll(async () => {
    await mkdir(inputs());
    await makeBatch(inputs(), 20);
  });
  const settings = (out: string): JobSettings => pngSettings(out, '{name}_{model}_x{scale}.{ext}', 'replace');

  it('reports N of M and an overall percent that never go backwards', async () => {
    const { dir, local } = engine;
    const out = path.join(dir, 'out1');
    const snaps: QueueSnapshot[] = [];
    const events: ServiceEvent[] = [];
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => settings(out),
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'queue') snaps.push(e.queue);
      },
    });
    const added = await queue.addPaths([inputs()]);
    expect(added).toHaveLength(20);
    await queue.start();
    await queue.idle();
    const during = snaps.filter((s) => s.total === 20);
    expect(during.length).toBeGreaterThan(40);
    for (let i = 1; i < during.length; i++) {
      expect(during[i]!.finished).toBeGreaterThanOrEqual(during[i - 1]!.finished);
      expect(during[i]!.percent).toBeGreaterThanOrEqual(during[i - 1]!.percent);
    }
    // every count from 0 to 20 was reported ("7 of 20")
    expect(new Set(during.map((s) => s.finished))).toEqual(new Set(Array.from({ length: 21 }, (_, i) => i)));
    const last = queue.snapshot();
    expect([last.finished, last.total, last.percent, last.running]).toEqual([20, 20, 100, false]);
    expect(last.items.every((i) => i.status === 'done' && i.percent === 100)).toBe(true);
    expect(events.at(-1)).toEqual({ type: 'batchFinished', done: 20, failed: 0, total: 20 });
    expect(await listFiles(out)).toHaveLength(20);
    // per-item percent never goes backwards either
    const perItem = new Map<string, number>();
    for (const e of events) {
      if (e.type !== 'item') continue;
      if (e.item.status === 'running') expect(e.item.percent).toBeGreaterThanOrEqual(perItem.get(e.item.id) ?? 0);
      perItem.set(e.item.id, e.item.percent);
    }
  });

  it('cancel all stops within one tile and leaves no partial output', async () => {
    const { dir, local, gate } = engine;
    const out = path.join(dir, 'out2');
    const events: ServiceEvent[] = [];
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => settings(out),
      onEvent: (e) => events.push(e),
    });
    await queue.addPaths([inputs()]);
    // Hold the 4th image (test gate) before it starts, then again before its second tile: the cancel comes
    // while that tile is about to run, whatever the machine's speed.
    const fourth = queue.snapshot().items[3]!;
    const imagePoint = inputPoint(path.basename(fourth.inputPath));
    await gate.hold(imagePoint);
    await queue.start();
    await gate.reached(imagePoint);
    await gate.hold('tile-1');
    await gate.release(imagePoint);
    await gate.reached('tile-1');
    expect(queue.snapshot().finished).toBe(3);
    const seen = events.length;
    const cancelling = queue.cancel();
    // The gate does not watch the cancel: the pipeline's own check between tiles must stop the work.
    await gate.release('tile-1');
    await cancelling;
    await queue.idle();
    const percents = (from: number) =>
      events
        .slice(from)
        .flatMap((e) =>
          e.type === 'item' && e.item.id === fourth.id && e.item.status === 'running' ? [e.item.percent] : [],
        );
    const before = Math.max(0, ...percents(0).slice(0, seen));
    // No tile ran after the cancel: the item's progress never moved again.
    expect(Math.max(0, ...percents(seen))).toBeLessThanOrEqual(before);
    const snap = queue!.snapshot();
    expect(snap.items.map((i) => i.status)).toEqual([...Array(3).fill('done'), ...Array(17).fill('cancelled')]);
    expect(snap.running).toBe(false);
    expect(snap.finished).toBe(20);
    // Stopped images did no work: the batch percent stays at what was done (3 of 20 and a part), never 100 %.
    expect(snap.percent).toBeGreaterThanOrEqual(15);
    expect(snap.percent).toBeLessThan(20);
    // exactly the three finished outputs; no temp file, nothing for the cancelled item
    const files = await listFiles(out);
    expect(files).toHaveLength(3);
    expect(files.every((f) => !f.startsWith('.') && !f.endsWith('.tmp'))).toBe(true);
    expect(snap.items[3]!.outputPath).toBeUndefined();

    // retry brings the cancelled ones back and finishes them
    await queue!.retry(snap.items[3]!.id);
    await queue!.idle();
    expect(queue!.snapshot().items[3]!.status).toBe('done');
    expect(await listFiles(out)).toHaveLength(4);
  });

  describe('remote', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer({ engineLimits: {} });
    });
    afterAll(async () => server.stop());

    it('cancel stops polling at once, without waiting for the task', async () => {
      const { dir, gate } = engine;
      const key = await addUser(server, 'cancel@example.com', 100);
      const poll = { ...FAST_POLL, initialMs: 100, maxMs: 100 };
      const remote = createRemoteBackend({ baseUrl: server.url, apiKey: key, poll });
      const out = path.join(dir, 'out3');
      const queue = await JobQueue.open({ backend: () => remote, settings: () => ({ ...settings(out), scale: 4 }) });
      await queue.addPaths([path.join(inputs(), 'img01_baby_LRBI_x4.png')]);
      // The service holds the task (test gate; the server runs in this process) until after the cancel: the
      // queue settles while the task is still running there, so the client did not wait for it.
      await gate.hold(anyImagePoint(0));
      await queue.start();
      await gate.reached(anyImagePoint(0));
      await queue.cancel(queue.snapshot().items[0]!.id);
      await queue.idle();
      expect(queue.snapshot().items[0]!.status).toBe('cancelled');
      expect(await listFiles(out)).toEqual([]);
      await gate.release(anyImagePoint(0));
    });
  });
});
