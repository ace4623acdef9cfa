/**
 * Exact output geometry through the app's service (issue 41 item 1): a width set in the settings and a preset's
 * long side give exactly that size locally; in Cloud mode the smallest contract scale that reaches the size is
 * what the estimate prices and the service charges, and the download is resized here to exactly the size.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateCreditsFor } from '../../app/credits/estimate.js';
import { cloudScaleFor } from '../../app/remote/outputResize.js';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import type { JobItem } from '../../app/service/crispService.js';
import { BUILT_IN_PRESETS } from '../../app/settings/presets.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { ONNX_DIR } from '../helpers/paths.js';
import type { TestServer } from '../server/helpers.js';
import { addUser, BIRD, FAST_POLL, startServer } from './appHelpers.js';

const W = 72;
const H = 50;

describe('exact output size through the app service', () => {
  let dir: string;
  let input: string;
  let server: TestServer;
  beforeAll(async () => {
    dir = await tempDir('crisp-app-size-');
    input = path.join(dir, 'in', 'wide.png');
    await mkdir(path.dirname(input));
    await sharp(BIRD).extract({ left: 0, top: 0, width: W, height: H }).png().toFile(input);
    server = await startServer();
  });
  afterAll(async () => {
    await server.stop();
    await removeDir(dir);
  });

  const open = async (name: string): Promise<ServiceHandle> => {
    const presetsFile = path.join(dir, `${name}-presets.json`);
    const options = { ...BUILT_IN_PRESETS[1]!.options, model: FAST_MODEL, longSide: 120, width: null, height: null };
    await writeFile(presetsFile, JSON.stringify({ version: 1, presets: [{ name: 'Long 120', options }] }));
    return createService({
      dataDir: path.join(dir, name),
      secrets: createFileSecretStore(path.join(dir, name, 'secrets.json')),
      modelDirs: [ONNX_DIR],
      presetsFile,
      remote: { poll: FAST_POLL },
    });
  };

  async function runOne(svc: ServiceHandle): Promise<JobItem> {
    await svc.clearFinished();
    const [added] = await svc.addPaths([input]);
    const finished = new Promise<void>((resolve) => svc.subscribe((e) => e.type === 'batchFinished' && resolve()));
    await svc.start();
    await finished;
    const item = (await svc.getQueue()).items.find((i) => i.id === added!.id)!;
    expect(item).toMatchObject({ status: 'done' });
    const meta = await sharp(item.outputPath!).metadata();
    expect(item.outputDimensions).toEqual({ width: meta.width, height: meta.height });
    return item;
  }

  it('locally: a width from the settings, then a preset with a long side', async () => {
    const svc = await open('local');
    try {
      const out = path.join(dir, 'out-local');
      await svc.updateSettings({ model: FAST_MODEL, width: 100, height: null, longSide: null, outputFolder: out });
      const byWidth = await runOne(svc);
      expect(byWidth.outputDimensions).toEqual({ width: 100, height: Math.round((H * 100) / W) });
      expect(byWidth.madeWith).toMatchObject({ size: { width: 100 } });

      const chosen = await svc.choosePreset('Long 120');
      expect(chosen).toMatchObject({ longSide: 120, width: null, height: null });
      await svc.updateSettings({ outputFolder: out });
      const byPreset = await runOne(svc);
      expect(byPreset.outputDimensions).toEqual({ width: 120, height: Math.round((H * 120) / W) });
    } finally {
      await svc.close();
    }
  });

  it('Cloud: the smallest contract scale that reaches the size is priced, charged, and resized here', async () => {
    // Width 100 of 72×50 needs ×2 (1 credit); long side 200 needs ×3 (2 credits): the price follows the size.
    expect(cloudScaleFor({ width: W, height: H }, { width: 100 })).toEqual({
      scale: 2,
      target: { width: 100, height: 69 },
    });
    expect(cloudScaleFor({ width: W, height: H }, { longSide: 200 })).toEqual({
      scale: 3,
      target: { width: 200, height: 139 },
    });
    expect(estimateCreditsFor('cloud', { scale: 8, size: { width: 100 } }, [{ width: W, height: H }])).toEqual({
      mode: 'cloud',
      credits: 1,
      items: 1,
    });
    expect(() => cloudScaleFor({ width: W, height: H }, { width: 1000 })).toThrow(
      /would take ×14, more than the ×8 a service upscales/,
    );

    const key = await addUser(server, 'size@example.com', 20);
    const svc = await open('cloud');
    try {
      const out = path.join(dir, 'out-cloud');
      await svc.updateSettings({
        mode: 'cloud',
        baseUrl: server.url,
        model: FAST_MODEL,
        scale: 8,
        width: 100,
        outputFolder: out,
      });
      await svc.setApiKey(key);
      await svc.addPaths([input]);
      expect(await svc.estimate()).toEqual({ mode: 'cloud', credits: 1, items: 1 });
      await svc.updateSettings({ width: null, longSide: 200 });
      expect(await svc.estimate()).toEqual({ mode: 'cloud', credits: 2, items: 1 });
      await svc.clearFinished();
      await svc.removeItem((await svc.getQueue()).items[0]!.id).catch(() => undefined);
      const item = await runOne(svc);
      expect(item.outputDimensions).toEqual({ width: 200, height: 139 });
      expect(item.creditsDeducted).toBe(2);
      expect(await svc.getAccount()).toMatchObject({ currentCredits: 18 });
    } finally {
      await svc.close();
    }
  });
});
