/**
 * Fairness benchmark (`npm run bench -- --only fairness`): how long user B's one-image task takes while
 * user A's 30-image task runs, against the same task on an idle server (same process, same run). A FIFO
 * queue would make B wait for all of A; round-robin by image makes B wait at most one of A's images.
 * The machine is shared and noisy: read the ratios, not the seconds.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { Caller } from '../../engine/service/api.js';
import { startServer } from '../../engine/server/start.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

const FIELDS = { model: 'digital-art-4x', scale: '2', saveImageAs: 'png', enhanceFace: 'false' };

export async function runFairnessBench(): Promise<string[]> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-bench-fair-'));
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    allowPrivateUrls: false,
    modelDirs: [ONNX_DIR],
    logLevel: 'warn',
    threads: 1,
  });
  try {
    const a = await server.accounts.addUser({ email: 'a@example.com', credits: 10_000 });
    const b = await server.accounts.addUser({ email: 'b@example.com', credits: 10_000 });
    const ca: Caller = { userId: a.account.userId, email: a.account.email };
    const cb: Caller = { userId: b.account.userId, email: b.account.email };
    const small = await sharp(path.join(IMAGES_DIR, 'set5', 'bird.png'))
      .resize(64, 64)
      .png()
      .toBuffer();
    const tiles = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        sharp(path.join(IMAGES_DIR, 'set5', 'baby.png'))
          .extract({ left: (i % 6) * 80, top: Math.floor(i / 6) * 80, width: 96, height: 96 })
          .png()
          .toBuffer(),
      ),
    );
    const files = (bufs: Buffer[]) =>
      bufs.map((data, i) => ({ originalFileName: `${i}.png`, data: new Uint8Array(data) }));
    const run = async (caller: Caller, bufs: Buffer[]) => {
      const t0 = performance.now();
      const { taskId } = await server.engine.startTask(caller, { fields: FIELDS, file: files(bufs) });
      for (;;) {
        const s = await server.engine.getTaskStatus(caller, { data: { taskId } });
        if (s.status === 'PROCESSED' || s.status === 'PROCESSING_FAILED') return (performance.now() - t0) / 1000;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await run(cb, [small]); // warm-up: session creation
    const alone = await run(cb, [small]);
    const bigRun = run(ca, tiles);
    await new Promise((r) => setTimeout(r, 300));
    const underLoad = await run(cb, [small]);
    const big = await bigRun;
    // One giant image instead of many: a flat 1024² PNG at ×1 is four 512² CPU tiles of the ×4 model.
    // Turns by image would make B wait for all of it; turns by tile, for one tile.
    const flat = await sharp({ create: { width: 1024, height: 1024, channels: 3, background: '#5a8cc8' } })
      .png()
      .toBuffer();
    const runFlat = async () => {
      const t0 = performance.now();
      const { taskId } = await server.engine.startTask(ca, {
        fields: { ...FIELDS, scale: '1' },
        file: files([flat]),
      });
      for (;;) {
        const s = await server.engine.getTaskStatus(ca, { data: { taskId } });
        if (s.status === 'PROCESSED' || s.status === 'PROCESSING_FAILED') return (performance.now() - t0) / 1000;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const giantRun = runFlat();
    await new Promise((r) => setTimeout(r, 300));
    const underGiant = await run(cb, [small]);
    const giant = await giantRun;
    return [
      `| B's 1 image, idle server (baseline) | ${alone.toFixed(2)} s | 1.00× |`,
      `| B's 1 image while A's 30 images run | ${underLoad.toFixed(2)} s | ${(underLoad / alone).toFixed(2)}× baseline |`,
      `| A's 30 images | ${big.toFixed(2)} s | ${(big / alone).toFixed(2)}× baseline (what FIFO would add to B) |`,
      `| B's 1 image while A's flat 1024² ×1 (4 tiles) runs | ${underGiant.toFixed(2)} s | ${(underGiant / alone).toFixed(2)}× baseline |`,
      `| A's flat 1024² ×1 (with B's image beside it) | ${giant.toFixed(2)} s | ${(giant / alone).toFixed(2)}× baseline (what turns by image would add to B) |`,
    ];
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
