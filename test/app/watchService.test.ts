/**
 * Watched folders from the app (service subject "watch"): add with a preset, counts following the journal,
 * pause / resume, persisted across a restart of the service, refusals in sentences. The backend is a small
 * stand-in that really writes the output (a sharp resize by the preset's scale), counting its calls.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpscaleBackend, UpscaleRequest } from '../../app/backends/backend.js';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import type { ServiceEvent, WatchView } from '../../app/service/crispService.js';
import { writeFileAtomic } from '../../engine/service/storage/atomicFile.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { until } from '../helpers/until.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');

function resizingBackend(calls: UpscaleRequest[]): UpscaleBackend {
  return {
    mode: 'local',
    async upscale(req) {
      calls.push(req);
      const meta = await sharp(req.inputPath).metadata();
      const s = req.settings.scale;
      const data = await sharp(req.inputPath)
        .resize(meta.width * s, meta.height * s)
        .png()
        .toBuffer();
      await writeFileAtomic(req.outputPath, data);
      return {
        outputPath: req.outputPath,
        dimensions: { width: meta.width * s, height: meta.height * s },
        fileSize: data.length,
        creditsDeducted: 0,
        warnings: [],
      };
    },
    estimate: async () => 0,
    getAccount: async () => ({ available: false }),
    close: async () => undefined,
  };
}

describe('watched folders in the app', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-watch-svc-');
  });
  afterAll(async () => removeDir(dir));

  it('adds, counts, pauses, resumes and keeps watched folders across a restart', async () => {
    const calls: UpscaleRequest[] = [];
    const dataDir = path.join(dir, 'app');
    const watched = path.join(dir, 'camera');
    await mkdir(watched, { recursive: true });
    const open = (): Promise<ServiceHandle> =>
      createService({
        dataDir,
        secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
        modelDirs: [],
        modelsDir: path.join(dataDir, 'models'),
        presetsFile: path.join(dir, 'presets.json'),
        watchPollMs: 30,
        backendFactory: () => resizingBackend(calls),
      });
    let svc = await open();
    const events: WatchView[][] = [];
    svc.subscribe((e: ServiceEvent) => {
      if (e.type === 'watches') events.push(e.watches);
    });

    const refused = async (p: Promise<unknown>) =>
      (
        (await p.then(
          () => undefined,
          (e: unknown) => e,
        )) as Error
      ).message;
    expect(await refused(svc.addWatch({ dir: 'camera', preset: 'Photos' }))).toBe(
      'The folder to watch must be a full path, not "camera".',
    );
    expect(await refused(svc.addWatch({ dir: path.join(dir, 'nope'), preset: 'Photos' }))).toBe(
      `${path.join(dir, 'nope')} is not a folder: choose a folder to watch.`,
    );
    expect(await refused(svc.addWatch({ dir: watched, preset: 'Posters' }))).toMatch(
      /^There is no preset named "Posters"\./,
    );
    expect(await refused(svc.addWatch({ dir: watched, preset: 'Photos', outDir: watched }))).toMatch(
      /^The outputs folder cannot be the watched folder/,
    );
    // Each refusal carries its own catalog code to the page (not a generic bad-request).
    await expect(svc.addWatch({ dir: 'camera', preset: 'Photos' })).rejects.toMatchObject({ code: 'watch-refused' });
    await expect(svc.addWatch({ dir: watched, preset: 'Posters' })).rejects.toMatchObject({ code: 'preset-refused' });

    const added = await svc.addWatch({ dir: watched, preset: 'print ×2 lossless' });
    expect(added).toMatchObject({
      dir: watched,
      preset: 'Print ×2 lossless',
      outDir: path.join(watched, 'upscaled'),
      paused: false,
    });
    for (const i of [1, 2, 3])
      await sharp(BIRD)
        .extract({ left: i, top: i, width: 20, height: 20 })
        .png()
        .toFile(path.join(watched, `p${i}.png`));
    const list = () => svc.listWatches();
    // Settled: three done and nothing left pending (an arrival is counted pending before its size is stable).
    let views = await until('3 done', list, (v) => v[0]?.counts.done === 3 && v[0].counts.pending === 0);
    expect(views[0]!.counts).toEqual({ done: 3, failed: 0, pending: 0 });
    // Each image exactly once: nothing (an output, a temp file) was taken as a fourth.
    expect(calls).toHaveLength(3);
    expect(calls.map((c) => [c.inputName, c.settings.scale, c.settings.saveImageAs, c.settings.metadata])).toEqual(
      expect.arrayContaining([
        ['p1.png', 2, 'png', 'keep'],
        ['p2.png', 2, 'png', 'keep'],
        ['p3.png', 2, 'png', 'keep'],
      ]),
    );
    expect((await readdir(path.join(watched, 'upscaled'))).filter((f) => !f.startsWith('.')).sort()).toEqual([
      'p1_service-lite-4x_x2.png',
      'p2_service-lite-4x_x2.png',
      'p3_service-lite-4x_x2.png',
    ]);
    expect(events.some((e) => e[0]?.counts.done === 3)).toBe(true);

    const paused = await svc.pauseWatch(added.id);
    expect(paused.paused).toBe(true);
    await svc.close();

    // Reopened: still watched, still paused, counts from the journal; images that arrived meanwhile wait for resume.
    await writeFile(
      path.join(watched, 'p4.png'),
      await sharp(BIRD).extract({ left: 9, top: 9, width: 20, height: 20 }).png().toBuffer(),
    );
    svc = await open();
    views = await svc.listWatches();
    expect(views).toHaveLength(1);
    expect(views[0]).toMatchObject({ id: added.id, paused: true, counts: { done: 3, failed: 0 } });
    await svc.resumeWatch(added.id);
    views = await until(
      '4 done',
      () => svc.listWatches(),
      (v) => v[0]?.counts.done === 4,
    );
    expect(calls.map((c) => c.inputName).sort()).toEqual(['p1.png', 'p2.png', 'p3.png', 'p4.png']);

    await svc.removeWatch(added.id);
    expect(await svc.listWatches()).toEqual([]);
    await svc.close();
  });
});
