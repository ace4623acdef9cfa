import { readFile, stat } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import type { ServiceEvent } from '../../app/service/crispService.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { ONNX_DIR } from '../helpers/paths.js';
import type { TestServer } from '../server/helpers.js';
import { createTestGate, inputPoint, type TestGate } from '../helpers/testGate.js';
import { addUser, FAST_POLL, makeBatch, startServer } from './appHelpers.js';

describe('createService (cloud mode against a real crisp serve)', () => {
  let server: TestServer;
  let dir: string;
  let gate: TestGate;
  beforeAll(async () => {
    // The server runs in this process: the test gate holds its tasks.
    gate = await createTestGate({ inProcess: true });
    server = await startServer();
    dir = await tempDir('crisp-app-svc-');
  });
  afterAll(async () => {
    await server.stop();
    await removeDir(dir);
    await gate.close();
  });

  const open = (dataDir: string): Promise<ServiceHandle> =>
    createService({
      dataDir,
      secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
      modelDirs: [ONNX_DIR],
      remote: { poll: FAST_POLL },
    });

  it('settings, key, estimate, balance, a run with events, and resume after a restart', async () => {
    const key = await addUser(server, 'svc@example.com', 30);
    const dataDir = path.join(dir, 'app');
    const inputs = path.join(dir, 'in');
    const out = path.join(dir, 'out');
    await mkdir(inputs);
    await makeBatch(inputs, 4);

    let svc = await open(dataDir);
    expect((await svc.getSettings()).mode).toBe('local');
    expect(await svc.estimate()).toEqual({ mode: 'local', credits: 0, items: 0 });
    await expect(svc.updateSettings({ scale: 9 as never })).rejects.toThrow(/^Invalid setting scale/);
    await expect(svc.updateSettings({ scale: 9 as never })).rejects.toMatchObject({
      code: 'invalid-setting',
      params: { name: 'scale' },
    });
    await expect(svc.updateSettings({ template: '{nom}.{ext}' })).rejects.toThrow(/unknown placeholder \{nom\}/);
    await svc.updateSettings({
      mode: 'cloud',
      baseUrl: server.url,
      model: FAST_MODEL,
      scale: 2,
      outputFolder: out,
      overwrite: 'replace',
    });
    expect(await svc.hasApiKey()).toBe(false);
    await svc.setApiKey(key);
    expect(await svc.hasApiKey()).toBe(true);
    // the key lives in the 0600 secret file only
    expect(await readFile(path.join(dataDir, 'settings.json'), 'utf8')).not.toContain(key);
    expect((await stat(path.join(dataDir, 'secrets.json'))).mode & 0o777).toBe(0o600);
    expect(await svc.getAccount()).toMatchObject({ available: true, currentCredits: 30 });
    const listed = await svc.listModels();
    expect(listed.filter((m) => m.kind !== 'face').every((m) => m.installed)).toBe(true);
    // Exactly the service's models (its get-capabilities list), not every contract model.
    expect(listed.filter((m) => m.kind !== 'face').map((m) => m.name)).toEqual([
      'service-lite-4x',
      'clear-boost-4x',
      'crystal-plus-4x',
      'digital-art-4x',
    ]);
    // This crisp serve runs without --face-model: its get-capabilities answer turns the Cloud face entry off.
    expect(listed.filter((m) => m.kind === 'face')).toMatchObject([{ name: 'service:faces', installed: false }]);

    const added = await svc.addPaths([inputs]);
    expect(added).toHaveLength(4);
    expect(await svc.estimate()).toEqual({ mode: 'cloud', credits: 4, items: 4 });

    // First run: stop the app while the third item runs (held on the service by the test gate).
    const events: ServiceEvent[] = [];
    svc.subscribe((e) => events.push(e));
    const third = inputPoint('img03_butterfly_LRBI_x4.png');
    await gate.hold(third);
    await svc.start();
    await gate.reached(third);
    await svc.close();
    await gate.release(third);
    const doneBefore = (
      await Promise.all(
        added.slice(0, 2).map((i) => stat(path.join(out, `${path.parse(i.inputName).name}_${FAST_MODEL}_x2.png`))),
      )
    ).map((s) => s.mtimeMs);
    expect(events.some((e) => e.type === 'account')).toBe(true);

    // Restart: finished items stay finished, the interrupted one is queued again, nothing is redone.
    svc = await open(dataDir);
    const resumed = await svc.getQueue();
    expect(resumed.items.map((i) => i.status)).toEqual(['done', 'done', 'queued', 'queued']);
    const finished = new Promise<ServiceEvent>((resolve) =>
      svc.subscribe((e) => e.type === 'batchFinished' && resolve(e)),
    );
    await svc.start();
    expect(await finished).toEqual({ type: 'batchFinished', done: 2, failed: 0, total: 2 });
    const q = await svc.getQueue();
    expect(q.items.map((i) => i.status)).toEqual(['done', 'done', 'done', 'done']);
    const doneAfter = (
      await Promise.all(
        added.slice(0, 2).map((i) => stat(path.join(out, `${path.parse(i.inputName).name}_${FAST_MODEL}_x2.png`))),
      )
    ).map((s) => s.mtimeMs);
    expect(doneAfter).toEqual(doneBefore);

    const img = await svc.readImage(q.items[3]!.id, 'output');
    expect(img.mime).toBe('image/png');
    expect(await svc.revealOutput(q.items[3]!.id)).toBe(false);
    // four images charged once each (the one interrupted on the client was never settled on the server)
    expect((await svc.getAccount()).currentCredits).toBe(26);

    await svc.clearFinished();
    expect((await svc.getQueue()).items).toEqual([]);
    const dropped = await svc.addFile(
      'pasted.png',
      new Uint8Array(await readFile(path.join(inputs, 'img02_bird_LRBI_x4.png'))),
    );
    expect(dropped.inputDimensions).toEqual({ width: 72, height: 72 });
    await expect(svc.addFile('x.png', new Uint8Array([1, 2, 3]))).rejects.toThrow(
      'x.png is not a JPG, PNG or WEBP image.',
    );
    await svc.setApiKey(null);
    await svc.start();
    await new Promise<void>((resolve) => svc.subscribe((e) => e.type === 'batchFinished' && resolve()));
    const failed = (await svc.getQueue()).items[0]!;
    expect([failed.status, failed.error]).toEqual(['failed', 'No API key is set: enter your key in the Cloud card.']);
    await svc.close();
  });
});
