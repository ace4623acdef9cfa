/** Images are probed when added: header + dimensions, and truncated or corrupted files flagged before any work. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeImage } from '../../app/jobs/imageProbe.js';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import type { UpscaleBackend } from '../../app/backends/backend.js';

let dir: string;
const files: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-probe-'));
  const base = sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 200, g: 80, b: 20 } } });
  const png = await base.clone().png().toBuffer();
  const jpg = await base.clone().jpeg().toBuffer();
  // Large enough that cutting its tail leaves the header whole.
  const noisy = sharp({
    create: {
      width: 200,
      height: 150,
      channels: 3,
      background: '#888',
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  });
  const bigWebp = await noisy.clone().webp().toBuffer();
  const bigJpg = await sharp({
    create: {
      width: 200,
      height: 150,
      channels: 3,
      background: '#888',
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  })
    .jpeg()
    .toBuffer();
  const webp = await base.clone().webp().toBuffer();
  const garbled = Buffer.from(png);
  garbled[garbled.length - 20] = (garbled[garbled.length - 20] ?? 0) ^ 0xff; // inside IDAT: its CRC no longer matches
  const entries: [string, Buffer][] = [
    ['good.png', png],
    ['good.jpg', jpg],
    ['good.webp', webp],
    ['cut.png', png.subarray(0, png.length - 30)],
    ['garbled.png', garbled],
    ['cut.jpg', bigJpg.subarray(0, bigJpg.length - 400)],
    ['cut.webp', bigWebp.subarray(0, bigWebp.length - 400)],
    ['header-only.png', png.subarray(0, 33)],
  ];
  for (const [name, bytes] of entries) {
    files[name] = path.join(dir, name);
    await writeFile(files[name]!, bytes);
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('image probe', () => {
  it('reads the dimensions of good JPG, PNG and WebP files', async () => {
    for (const n of ['good.png', 'good.jpg', 'good.webp'])
      expect(await probeImage(files[n]!)).toEqual({ ok: true, width: 40, height: 30 });
    const shared = path.resolve('../shared/images/set5/baby.png');
    const m = await sharp(await readFile(shared)).metadata();
    expect(await probeImage(shared)).toEqual({ ok: true, width: m.width, height: m.height });
  });

  it('names the damage of truncated and corrupted files', async () => {
    const problem = async (n: string) => {
      const r = await probeImage(files[n]!);
      return r.ok ? 'ok' : r.problem;
    };
    expect(await problem('cut.png')).toBe(
      'cut.png is damaged (the PNG data is cut short): re-export or download it again, then add it anew.',
    );
    expect(await problem('garbled.png')).toBe(
      'garbled.png is damaged (a PNG chunk is corrupted): re-export or download it again, then add it anew.',
    );
    expect(await problem('cut.jpg')).toBe(
      'cut.jpg is damaged (the JPEG data is cut short): re-export or download it again, then add it anew.',
    );
    expect(await problem('cut.webp')).toBe(
      'cut.webp is damaged (the WebP data is cut short): re-export or download it again, then add it anew.',
    );
    expect(await problem('header-only.png')).toMatch(/^header-only\.png is damaged/);
  });

  it('the queue flags broken files as failed when they are added, and never runs them', async () => {
    const backend = {
      mode: 'local',
      upscale: async () => {
        throw new Error('must not run');
      },
    } as unknown as UpscaleBackend;
    const q = await JobQueue.open({
      backend: () => backend,
      settings: () => ({
        model: 'digital-art-4x',
        scale: 2,
        format: 'png',
        compression: 0,
        face: false,
        outputFolder: dir,
        template: '{name}_x{scale}.{ext}',
        overwrite: 'replace',
      }),
    });
    const added = await q.addPaths([files['good.png']!, files['cut.png']!, files['garbled.png']!]);
    expect(added.map((i) => [i.inputName, i.status, i.inputDimensions ?? null])).toEqual([
      ['good.png', 'queued', { width: 40, height: 30 }],
      ['cut.png', 'failed', null],
      ['garbled.png', 'failed', null],
    ]);
    await q.cancel(added[0]!.id);
    await q.retry(added[1]!.id);
    expect(q.get(added[1]!.id)?.status).toBe('failed');
  });
});
