// @vitest-environment jsdom
/**
 * Issue 38 (and 41 item 6): a local failure reaches the window with the catalog code core or the app's probe
 * raised, and its params (JobItem.errorCode, errorParams), so a German window says it in German — a damaged
 * image, a model that is not installed, an image core cannot decode — and never as the service's failure
 * ("… oder im lokalen Modus") while in Local mode. English keeps the engine's own, more precise sentence.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../../app/backends/local/localBackend.js';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import { de } from '../../renderer/src/i18n/de.js';
import { closeFakes } from './fakeService.js';
import { renderApp } from './renderApp.js';
import { hugePng } from '../helpers/craftedImages.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
  document.documentElement.lang = '';
});

const rows = () => within(screen.getByRole('list', { name: 'Bilder' }));
const rowText = (name: string) =>
  rows()
    .getAllByRole('listitem')
    .find((li) => li.textContent?.includes(name))
    ?.querySelector('.item-error')?.textContent;

describe('local failures in the German window', () => {
  it('a damaged PNG, found when it is added: a German sentence, not the probe’s English', async () => {
    const { fake } = await renderApp({ settings: { language: 'de' } });
    await screen.findByRole('heading', { name: 'Hochskalieren in drei Schritten' });
    const png = await readFile(path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png'));
    const damaged = path.join(fake.dataDir, 'damaged.png');
    await writeFile(damaged, png.subarray(0, Math.floor(png.length / 2)));
    await act(async () => {
      await fake.addPaths([damaged]);
    });
    await waitFor(() =>
      expect(rowText('damaged.png')).toBe(
        'damaged.png ist beschädigt: Exportieren Sie es neu oder laden Sie es noch einmal herunter, und fügen Sie es dann neu hinzu.',
      ),
    );
    expect(fake.items[0]).toMatchObject({
      errorCode: 'damaged-image',
      errorParams: { name: 'damaged.png', detail: 'the PNG data is cut short' },
    });
    expect(document.body.textContent).not.toContain('is damaged');
  });

  it('through the local backend (a real engine process): each row in German, none as the service’s failure', async () => {
    const { fake } = await renderApp({ settings: { language: 'de' } });
    await screen.findByRole('heading', { name: 'Hochskalieren in drei Schritten' });
    const dir = fake.dataDir;
    const bird = path.join(dir, 'bird.png');
    await sharp(path.join(IMAGES_DIR, 'set5/bird.png')).resize(64, 64).png().toFile(bird);
    // Its header and chunks are whole (the queue's probe passes it), its pixel data far too short: core's
    // decoder refuses it in a worker thread.
    const broken = path.join(dir, 'broken.png');
    await writeFile(broken, hugePng(64, 64));

    const local = createLocalBackend({
      dataDir: path.join(dir, 'engine'),
      modelDirs: [ONNX_DIR],
      executionProvider: 'cpu',
    });
    let model = 'service-standard-4x'; // a catalog model the test models folder does not hold
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => ({
        model,
        scale: 2,
        format: 'png',
        compression: 0,
        face: false,
        outputFolder: path.join(dir, 'out'),
        template: '{name}_x{scale}.{ext}',
        overwrite: 'replace',
      }),
    });
    try {
      for (const [m, input] of [
        ['service-standard-4x', bird],
        ['digital-art-4x', broken],
      ] as const) {
        model = m;
        await queue.addPaths([input]);
        await queue.start();
        await queue.idle();
      }
      // The window shows the real queue's rows, as the service's events carry them.
      act(() => fake.emit({ type: 'queue', queue: queue.snapshot() }));
      await waitFor(() =>
        expect(rowText('bird.png')).toBe(
          'Das Modell service-standard-4x ist nicht installiert. Laden Sie es unter „Modelle herunterladen“ herunter oder wählen Sie ein installiertes Modell.',
        ),
      );
      expect(rowText('broken.png')).toBe(de['error.damagedImage'].replace('{name}', 'broken.png'));
      const items = queue.snapshot().items;
      expect(items.map((i) => i.errorCode)).toEqual(['model-not-installed', 'damaged-image']);
      // No English engine sentence, and nothing that blames a service or suggests Local mode.
      for (const item of items) expect(document.body.textContent).not.toContain(item.error);
      expect(document.body.textContent).not.toMatch(/Dienst konnte|lokalen Modus/);
    } finally {
      await queue.close();
      await local.close();
    }
  });
});
