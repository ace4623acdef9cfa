import path from 'node:path';
import { stat } from 'node:fs/promises';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend, type LocalBackend } from '../../app/backends/local/localBackend.js';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { FAST_MODEL, listFiles, removeDir, tempDir } from '../helpers/engineHarness.js';
import { ONNX_DIR } from '../helpers/paths.js';
import type { TestServer } from '../server/helpers.js';
import { addUser, FAST_POLL, LR_DIR, psnr, startServer } from './appHelpers.js';

describe('local worker backend and remote backend give the same image', () => {
  let server: TestServer;
  let local: LocalBackend;
  let out: string;
  let key: string;
  beforeAll(async () => {
    server = await startServer();
    key = await addUser(server, 'same@example.com', 50);
    out = await tempDir('crisp-app-out-');
    local = createLocalBackend({ dataDir: path.join(out, '.engine'), modelDirs: [ONNX_DIR], executionProvider: 'cpu' });
  });
  afterAll(async () => {
    await local.close();
    await server.stop();
    await removeDir(out);
  });

  it('same dimensions, PSNR ≥ 45 dB, credits deducted remotely only', async () => {
    const input = path.join(LR_DIR, 'baby_LRBI_x4.png');
    const settings = {
      model: FAST_MODEL,
      scale: 2 as const,
      saveImageAs: 'png' as const,
      compression: 0,
    };
    const seen: number[] = [];
    const a = await local.upscale({
      inputPath: input,
      inputName: 'baby.png',
      settings,
      outputPath: path.join(out, 'local.png'),
      onProgress: (p) => seen.push(p),
    });
    const remote = createRemoteBackend({ baseUrl: server.url, apiKey: key, poll: FAST_POLL });
    const b = await remote.upscale({
      inputPath: input,
      inputName: 'baby.png',
      settings,
      outputPath: path.join(out, 'remote.png'),
    });

    expect(a.dimensions).toEqual({ width: 256, height: 256 });
    expect(b.dimensions).toEqual(a.dimensions);
    const [ma, mb] = await Promise.all([sharp(a.outputPath).metadata(), sharp(b.outputPath).metadata()]);
    expect([mb.width, mb.height]).toEqual([ma.width, ma.height]);
    expect(await psnr(a.outputPath, b.outputPath)).toBeGreaterThanOrEqual(45);
    expect((await stat(b.outputPath)).size).toBe(b.fileSize);
    expect(a.creditsDeducted).toBe(0);
    expect(b.creditsDeducted).toBe(1); // scale 2: one credit per image (engine/service/credits/priceTable.ts)
    expect(seen.at(-1)).toBe(100);
    expect(seen).toEqual([...seen].sort((x, y) => x - y));
    expect(await remote.getAccount()).toEqual({
      available: true,
      email: 'same@example.com',
      currentCredits: 49,
      currentExtraCredits: 0,
    });
    expect(await local.getAccount()).toEqual({ available: false });
    expect(await remote.estimate(settings, 3)).toBe(3);
    expect(await local.estimate(settings, 3)).toBe(0);
    // only the two outputs: no temp files beside them
    expect((await listFiles(out)).filter((f) => !f.startsWith('.engine'))).toEqual(['local.png', 'remote.png']);
  });
});
