import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpscaleBackend } from '../../app/backends/backend.js';
import { JobQueue, type JobSettings } from '../../app/jobs/jobQueue.js';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { pollStatus, type TestServer } from '../server/helpers.js';
import { addUser, BIRD, FAST_POLL, startServer } from './appHelpers.js';

/**
 * The service may finish, and charge, a task after the app stopped waiting for it (the app was closed or
 * the item cancelled). Running the item again must pick that task up, not start and pay for a second one.
 */
describe('a cloud item the service already accepted is resumed, never paid twice', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startServer();
    dir = await tempDir('crisp-app-resume-');
  });
  afterAll(async () => {
    await server.stop();
    await removeDir(dir);
  });

  it('cancel after the task was accepted, the service charges it, retry downloads it without a new charge', async () => {
    const key = await addUser(server, 'resume@example.com', 10);
    const remote = createRemoteBackend({ baseUrl: server.url, apiKey: key, poll: FAST_POLL });
    let token: string | undefined;
    let queue: JobQueue | undefined;
    // Cancels the item the moment the service has accepted it, as a closing app would.
    const backend: UpscaleBackend = {
      ...remote,
      mode: 'cloud',
      upscale: (req) =>
        remote.upscale({
          ...req,
          onResumable: (t) => {
            req.onResumable?.(t);
            if (!token) {
              token = t;
              void queue?.cancel();
            }
          },
        }),
    };
    const settings: JobSettings = {
      model: FAST_MODEL,
      scale: 2,
      format: 'png',
      compression: 0,
      face: false,
      outputFolder: path.join(dir, 'out'),
      template: '{name}_{model}_x{scale}.{ext}',
      overwrite: 'replace',
    };
    queue = await JobQueue.open({
      stateFile: path.join(dir, 'queue.json'),
      backend: () => backend,
      settings: () => settings,
    });
    const [item] = await queue.addPaths([BIRD]);
    await queue.start();
    await queue.idle();
    expect(queue.get(item!.id)?.status).toBe('cancelled');
    expect(token).toBeDefined();

    // The service finishes the task; the first status poll charges it (its price, per the price table).
    const taskId = (JSON.parse(token!) as { taskId: string }).taskId;
    const done = await pollStatus(server.url, key, taskId);
    expect(done.status).toBe('PROCESSED');
    const charged = 10 - (await remote.getAccount()).currentCredits!;
    expect(charged).toBe(done.deductedCredits);
    expect(charged).toBeGreaterThan(0);

    // Reopen the queue from disk (as after a restart) and retry: it follows the same task. The token on disk is
    // rewritten as a version before the one face vocabulary saved it (settings with enhanceFace, no face): an
    // upgrade between the crash and the retry must resume too, never start and pay for the task again.
    const stateFile = path.join(dir, 'queue.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8')) as { resume: Record<string, string> };
    const saved = JSON.parse(state.resume[item!.id]!) as { baseUrl: string; taskId: string };
    state.resume[item!.id] = JSON.stringify({
      baseUrl: saved.baseUrl,
      taskId: saved.taskId,
      settings: { model: FAST_MODEL, scale: 2, saveImageAs: 'png', compression: 0, enhanceFace: false },
    });
    await writeFile(stateFile, JSON.stringify(state));
    queue = await JobQueue.open({
      stateFile: path.join(dir, 'queue.json'),
      backend: () => remote,
      settings: () => settings,
    });
    await queue.retry(item!.id);
    await queue.idle();
    const after = queue.get(item!.id)!;
    expect(after.status).toBe('done');
    expect(after.outputDimensions).toEqual({ width: 144, height: 144 });
    expect((await sharp(after.outputPath!).metadata()).width).toBe(144);
    expect(10 - (await remote.getAccount()).currentCredits!).toBe(charged);
  });
});
