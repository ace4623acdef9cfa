/**
 * Rows carry what made them (issue 26): each item records the settings it ran with and how long it took,
 * and both survive a restart of the queue (queue.json), so two rows of one image can be told apart after a
 * reload. The backend is a stand-in that writes a real PNG.
 */
import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpscaleBackend, UpscaleRequest } from '../../app/backends/backend.js';
import { JobQueue, type JobSettings } from '../../app/jobs/jobQueue.js';
import { IMAGES_DIR } from '../helpers/paths.js';

const BIRD = path.join(IMAGES_DIR, 'set5', 'bird.png');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-row-settings-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a 2×2 PNG for every request. */
function stubBackend(): UpscaleBackend & { requests: UpscaleRequest[] } {
  const requests: UpscaleRequest[] = [];
  return {
    mode: 'local',
    requests,
    async upscale(request) {
      requests.push(request);
      await sharp({ create: { width: 2, height: 2, channels: 3, background: '#808080' } })
        .png()
        .toFile(request.outputPath);
      return {
        outputPath: request.outputPath,
        dimensions: { width: 2, height: 2 },
        fileSize: (await stat(request.outputPath)).size,
        creditsDeducted: 0,
        warnings: [],
      };
    },
    estimate: async () => 0,
    getAccount: async () => ({ available: false }),
    close: async () => undefined,
  };
}

describe('rows carry their settings and duration', () => {
  it('records model, scale, passes, denoise, face and format per row, and keeps them and the duration across a restart', async () => {
    const input = path.join(dir, 'bird.png');
    await copyFile(BIRD, input);
    const stateFile = path.join(dir, 'queue.json');
    const backend = stubBackend();
    let settings: JobSettings = {
      mode: 'local',
      model: 'service-lite-4x',
      scale: 2,
      format: 'webp',
      compression: 0,
      face: true,
      denoise: 0.5,
      passes: 1,
      outputFolder: path.join(dir, 'out'),
      template: '{name}_{model}_x{scale}{face}.{ext}',
      overwrite: 'replace',
    };
    const queue = await JobQueue.open({ stateFile, backend: () => backend, settings: async () => settings });
    await queue.addPaths([input]);
    await queue.start();
    await queue.idle();
    // The same image again with other settings: the rows now differ in what made them, not only in size.
    settings = { ...settings, model: 'crystal-plus-4x', scale: 4, passes: 2, face: false, format: 'png' };
    delete settings.denoise;
    await queue.addPaths([input]);
    await queue.start();
    await queue.idle();
    const before = queue.snapshot().items;
    expect(before.map((i) => [i.status, i.madeWith])).toEqual([
      [
        'done',
        { mode: 'local', model: 'service-lite-4x', scale: 2, passes: 1, denoise: 0.5, face: true, format: 'webp' },
      ],
      ['done', { mode: 'local', model: 'crystal-plus-4x', scale: 4, passes: 2, face: false, format: 'png' }],
    ]);
    for (const i of before) expect(i.durationMs).toEqual(expect.any(Number));
    // The engine was asked for exactly what the rows say.
    expect(backend.requests.map((r) => [r.settings.model, r.settings.scale, r.settings.passes ?? 1])).toEqual([
      ['service-lite-4x', 2, 1],
      ['crystal-plus-4x', 4, 2],
    ]);
    await queue.close();

    const reopened = await JobQueue.open({ stateFile, backend: () => backend, settings: async () => settings });
    const after = reopened.snapshot().items;
    expect(after.map((i) => [i.id, i.madeWith, i.durationMs])).toEqual(
      before.map((i) => [i.id, i.madeWith, i.durationMs]),
    );
    await reopened.close();
  });
});
