import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpscaleBackend, UpscaleSettings } from '../../app/backends/backend.js';
import {
  BadRequestError,
  InsufficientCreditsError,
  RateLimitedError,
  UnauthorizedError,
  type BackendError,
} from '../../app/backends/errors.js';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import type { JobItem } from '../../app/service/crispService.js';
import { FAST_MODEL, listFiles, removeDir, tempDir } from '../helpers/engineHarness.js';
import type { TestServer } from '../server/helpers.js';
import { addUser, BIRD, FAST_POLL, LR_IMAGES, makeBatch, startServer } from './appHelpers.js';

const SETTINGS: UpscaleSettings = {
  model: FAST_MODEL,
  scale: 2,
  saveImageAs: 'png',
  compression: 0,
};

async function failure(backend: UpscaleBackend, settings: UpscaleSettings, out: string): Promise<BackendError> {
  try {
    await backend.upscale({ inputPath: BIRD, inputName: 'bird.png', settings, outputPath: out });
  } catch (e) {
    return e as BackendError;
  }
  throw new Error('expected a failure');
}

describe('contract errors become typed errors carrying the server message', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startServer();
    dir = await tempDir('crisp-app-err-');
  });
  afterAll(async () => {
    await server.stop();
    await removeDir(dir);
  });

  it('402 Insufficient credits', async () => {
    const key = await addUser(server, 'poor@example.com', 0);
    const e = await failure(
      createRemoteBackend({ baseUrl: server.url, apiKey: key }),
      SETTINGS,
      path.join(dir, 'a.png'),
    );
    expect(e).toBeInstanceOf(InsufficientCreditsError);
    expect(e.kind).toBe('InsufficientCredits');
    expect(e.status).toBe(402);
    expect(e.message).toBe('Insufficient credits');
  });

  it('401 Unauthorized (get-upload-url, get-account) and start-task’s "User not found"', async () => {
    const bogus = 'crisp_not-a-real-key-0123456789';
    const multipart = createRemoteBackend({ baseUrl: server.url, apiKey: bogus, multipartThreshold: 0 });
    const e = await failure(multipart, SETTINGS, path.join(dir, 'b.png'));
    expect(e).toBeInstanceOf(UnauthorizedError);
    expect([e.status, e.message]).toEqual([401, 'Unauthorized']);
    const acc = await multipart.getAccount().catch((x: unknown) => x as BackendError);
    expect(acc).toBeInstanceOf(UnauthorizedError);
    expect((acc as BackendError).message).toBe('Unauthorized');
    const direct = await failure(
      createRemoteBackend({ baseUrl: server.url, apiKey: bogus }),
      SETTINGS,
      path.join(dir, 'c.png'),
    );
    expect(direct).toBeInstanceOf(UnauthorizedError);
    expect([direct.status, direct.message]).toEqual([404, 'User not found']);
    // the key never leaks into what the UI shows
    for (const x of [e, acc as BackendError, direct]) expect(`${x.message} ${x.stack ?? ''}`).not.toContain(bogus);
  });

  it('unknown model → BadRequest with the server’s wording', async () => {
    const key = await addUser(server, 'model@example.com', 5);
    const e = await failure(
      createRemoteBackend({ baseUrl: server.url, apiKey: key }),
      { ...SETTINGS, model: 'no-such-model' },
      path.join(dir, 'd.png'),
    );
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/^Bad Request: model 'no-such-model' is not one of 'service-standard-4x'/);
  });

  it('429 Too Many Requests with retry-after', async () => {
    const limited = await startServer({ serverLimits: { rateLimitMax: 2, rateLimitWindowMs: 60_000 } });
    try {
      const key = await addUser(limited, 'fast@example.com', 5);
      const backend = createRemoteBackend({ baseUrl: limited.url, apiKey: key, rateLimitRetries: 0 });
      await backend.getAccount();
      await backend.getAccount();
      const e = await failure(backend, SETTINGS, path.join(dir, 'e.png'));
      expect(e).toBeInstanceOf(RateLimitedError);
      expect([e.status, e.message]).toEqual([429, 'Too Many Requests']);
      expect((e as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
      expect((e as RateLimitedError).retryAfterMs).toBeLessThanOrEqual(60_000);
    } finally {
      await limited.stop();
    }
  });

  it('in a batch, the failing item fails with the message and the rest continue', async () => {
    const email = 'batch@example.com';
    const key = await addUser(server, email, 1);
    const inputs = path.join(dir, 'in');
    const outputs = path.join(dir, 'out');
    await mkdir(inputs);
    await makeBatch(inputs, 3);
    const backend = createRemoteBackend({ baseUrl: server.url, apiKey: key, poll: FAST_POLL });
    let toppedUp = false;
    const queue = await JobQueue.open({
      backend: () => backend,
      settings: () => ({
        model: FAST_MODEL,
        scale: 2,
        format: 'png',
        compression: 0,
        face: false,
        outputFolder: outputs,
        template: '{name}_x{scale}.{ext}',
        overwrite: 'replace',
      }),
      onEvent: (ev) => {
        // Credits run out at item 2 (1 credit, 1 per image); top up after it fails so item 3 can succeed.
        if (ev.type === 'item' && ev.item.status === 'failed' && !toppedUp) {
          toppedUp = true;
          void server.accounts.addCredits(email, { credits: 5 });
        }
      },
    });
    await queue.addPaths([inputs]);
    await queue.start();
    await queue.idle();
    const items: JobItem[] = queue.snapshot().items;
    expect(items.map((i) => i.status)).toEqual(['done', 'failed', 'done']);
    expect(items[1]!.error).toBe('Insufficient credits');
    expect(items.map((i) => i.creditsDeducted)).toEqual([1, undefined, 1]);
    expect(await listFiles(outputs)).toEqual([
      `img01_${path.basename(LR_IMAGES[0]!, '.png')}_x2.png`,
      `img03_${path.basename(LR_IMAGES[2]!, '.png')}_x2.png`,
    ]);
    const snap = queue.snapshot();
    expect([snap.finished, snap.total, snap.percent, snap.running]).toEqual([3, 3, 100, false]);
  });
});
