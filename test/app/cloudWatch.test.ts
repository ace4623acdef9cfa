/**
 * Issue 41 item 2: a watched folder says where it runs. A Cloud folder (chosen per folder, whatever the app's
 * mode) shows what one image costs, sends nothing until the person allows it to spend (asked once), then runs
 * against a real `crisp serve`; the balance is pushed as it changes, and a failed image's reason reaches the app.
 * The first image is held by the approval itself, so nothing here races the machine.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateCredits } from '../../app/credits/estimate.js';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import type { ServiceEvent, WatchView } from '../../app/service/crispService.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import type { TestServer } from '../server/helpers.js';
import { addUser, BIRD, FAST_POLL, startServer } from './appHelpers.js';
import { until } from '../helpers/until.js';

/** A whole PNG (every chunk's CRC right, IEND there: taken at once) whose pixel data cannot be decoded. */
async function undecodablePng(): Promise<Buffer> {
  const png = Buffer.from(await sharp(BIRD).extract({ left: 1, top: 1, width: 24, height: 24 }).png().toBuffer());
  for (let off = 8; off < png.length;) {
    const len = png.readUInt32BE(off);
    if (png.toString('ascii', off + 4, off + 8) === 'IDAT') {
      for (let i = 2; i < Math.min(len, 40); i++) png[off + 8 + i]! ^= 0x5a;
      png.writeUInt32BE(crc32(png.subarray(off + 4, off + 8 + len)), off + 8 + len);
      break;
    }
    off += 12 + len;
  }
  return png;
}

describe('a Cloud watched folder', () => {
  let server: TestServer;
  let dir: string;
  let svc: ServiceHandle;
  beforeAll(async () => {
    server = await startServer();
    dir = await tempDir('crisp-cloud-watch-');
  });
  afterAll(async () => {
    await svc?.close();
    await server.stop();
    await removeDir(dir);
  });

  it('shows the cost, asks before the first paid image, then runs and pushes the balance; failures say why', async () => {
    const key = await addUser(server, 'watch@example.com', 20);
    const dataDir = path.join(dir, 'app');
    const watched = path.join(dir, 'inbox');
    await mkdir(watched, { recursive: true });
    const open = (): Promise<ServiceHandle> =>
      createService({
        dataDir,
        secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
        modelDirs: [],
        modelsDir: path.join(dataDir, 'models'),
        presetsFile: path.join(dir, 'presets.json'),
        watchPollMs: 30,
        remote: { poll: FAST_POLL },
      });
    svc = await open();
    const events: ServiceEvent[] = [];
    svc.subscribe((e) => events.push(e));
    // The app itself stays in Local mode: the folder's own choice decides where its images go.
    await svc.updateSettings({ baseUrl: server.url });
    await svc.setApiKey(key);
    expect((await svc.getSettings()).mode).toBe('local');
    // The service's own answer (get-account), asked apart from the app.
    const remote = createRemoteBackend({ baseUrl: server.url, apiKey: key });
    const balance = async () => (await remote.getAccount()).currentCredits;

    const price = estimateCredits('cloud', { scale: 4 }, 1).credits;
    const added = await svc.addWatch({ dir: watched, preset: 'Illustrations', mode: 'cloud' });
    expect(added).toMatchObject({ mode: 'cloud', spendAllowed: false, creditsPerImage: price });
    expect(price).toBeGreaterThan(0);

    await sharp(BIRD).extract({ left: 0, top: 0, width: 24, height: 24 }).png().toFile(path.join(watched, 'a.png'));
    const list = () => svc.listWatches();
    // The image arrived and waits for the question's answer: nothing was sent, nothing charged.
    let views = await until('awaiting approval', list, (v) => v[0]?.awaitingApproval === true);
    expect(views[0]!.counts).toMatchObject({ done: 0, failed: 0 });
    expect(await balance()).toBe(20);
    expect((await readdir(path.join(watched, 'upscaled'))).filter((f) => !f.startsWith('.'))).toEqual([]);

    const allowed = await svc.allowWatchSpending(added.id);
    expect(allowed.spendAllowed).toBe(true);
    views = await until('1 done', list, (v) => v[0]?.counts.done === 1);
    expect(views[0]!.awaitingApproval).toBeUndefined();
    expect(await balance()).toBe(20 - price);
    // The balance was pushed to the app as it changed (no Refresh balance needed).
    await until(
      'the new balance pushed',
      async () => events,
      (es) => es.some((e) => e.type === 'account' && e.account.currentCredits === 20 - price),
    );
    expect((await readdir(path.join(watched, 'upscaled'))).filter((f) => !f.startsWith('.'))).toEqual([
      'a_digital-art-4x_x4.png',
    ]);
    const out = await sharp(path.join(watched, 'upscaled', 'a_digital-art-4x_x4.png')).metadata();
    expect([out.width, out.height]).toEqual([96, 96]);

    // Asked once: the next image goes without a question. A damaged one fails, and the app says why.
    await writeFile(path.join(watched, 'broken.png'), await undecodablePng());
    views = await until('1 failed', list, (v) => v[0]?.counts.failed === 1);
    const failure = views[0]!.lastFailure as WatchView['lastFailure'];
    expect(failure?.name).toBe('broken.png');
    expect(failure?.reason).toMatch(/broken\.png/);
    expect(views[0]!.awaitingApproval).toBeUndefined();

    // Restarted, the app still says which image failed and why (read back from the folder's journal), and the
    // folder still runs in Cloud with spending allowed.
    await svc.close();
    svc = await open();
    expect(await svc.listWatches()).toMatchObject([
      { mode: 'cloud', spendAllowed: true, counts: { done: 1, failed: 1 }, lastFailure: failure },
    ]);
  });
});
