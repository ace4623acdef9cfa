import { stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { DEFAULT_PRICE_TABLE, priceOf } from '../../engine/service/credits/priceTable.js';
import { FAST_MODEL, listFiles, removeDir, tempDir } from '../helpers/engineHarness.js';
import type { TestServer } from '../server/helpers.js';
import {
  addUser,
  BIRD,
  FAST_POLL,
  FAST_RETRY,
  makeBigPng,
  startCuttingProxy,
  startServer,
  type CuttingProxy,
} from './appHelpers.js';

const MiB = 1024 * 1024;

describe('a ~30 MiB input through multipart, with the connection cut mid-part', () => {
  let server: TestServer;
  let proxy: CuttingProxy;
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-app-mp-');
    proxy = await startCuttingProxy();
    // Part URLs and download links must point at the proxy too, so the server's public origin is the proxy.
    server = await startServer({ publicUrl: proxy.url });
    proxy.target = (server.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await server.stop();
    await proxy.close();
    await removeDir(dir);
  });

  it('retries only the cut part, ends with the right output, charges one task once', async () => {
    const key = await addUser(server, 'big@example.com', 10);
    const input = path.join(dir, 'huge.png');
    await makeBigPng(BIRD, input, 30 * MiB);
    const size = (await stat(input)).size;
    expect(size).toBeGreaterThan(29 * MiB);

    const remote = createRemoteBackend({ baseUrl: proxy.url, apiKey: key, poll: FAST_POLL, retry: FAST_RETRY });
    const before = await remote.getAccount();
    expect(before.currentCredits).toBe(10);

    proxy.armCut(2 * MiB);
    const progress: number[] = [];
    const settings = {
      model: FAST_MODEL,
      scale: 1 as const,
      saveImageAs: 'png' as const,
      compression: 0,
    };
    const outPath = path.join(dir, 'out', 'huge_x1.png');
    const result = await remote.upscale({
      inputPath: input,
      inputName: 'huge.png',
      settings,
      outputPath: outPath,
      onProgress: (p) => progress.push(p),
    });

    expect(proxy.cuts).toBe(1);
    const parts = Math.ceil(size / (5 * MiB)); // the server's part size (S3's 5 MiB minimum)
    // every part once, plus exactly one re-send of the part that was cut
    expect(proxy.partPuts).toBe(parts + 1);
    expect(result.dimensions).toEqual({ width: 72, height: 72 });
    const meta = await sharp(outPath).metadata();
    expect([meta.width, meta.height]).toEqual([72, 72]);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(100);

    const cost = priceOf(DEFAULT_PRICE_TABLE, { scale: settings.scale, enhanceFace: false }, 1);
    expect(result.creditsDeducted).toBe(cost);
    const after = await remote.getAccount();
    expect(before.currentCredits! - after.currentCredits!).toBe(cost);
    expect(await server.ledger.reservedFor((await server.accounts.authenticate(key))!.userId)).toBe(0);
    expect(await listFiles(path.join(dir, 'out'))).toEqual(['huge_x1.png']);
  });
});
