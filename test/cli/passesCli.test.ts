/** `--passes 2` (double upscale) on the command line: one file, the total size, the total scale in its name. */
import { mkdir, readdir, writeFile, copyFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobReport } from '../../app/jobs/jobReport.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');
const HEAD = path.join(IMAGES_DIR, 'set5-x4/lr/head_LRBI_x4.png');

describe('crisp --passes', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(async () => removeDir(dir));

  it('upscale --passes 2 writes one file at the total scale, named by it', async () => {
    const out = path.join(dir, 'upscale');
    const r = await runCli([
      'upscale',
      BIRD,
      '-m',
      'digital-art-4x',
      '-s',
      '2',
      '--passes',
      '2',
      '--out',
      out,
      '--json',
    ]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as JobReport;
    expect(doc.results[0]).toMatchObject({ status: 'done', width: 288, height: 288, error: null });
    expect(await readdir(out)).toEqual(['bird_LRBI_x4_digital-art-4x_x4.png']);
    const meta = await sharp(path.join(out, 'bird_LRBI_x4_digital-art-4x_x4.png')).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([288, 288, 'png']);
  });

  it('batch --passes 2 does the same for every image of a folder', async () => {
    const input = path.join(dir, 'in');
    await mkdir(input);
    await copyFile(BIRD, path.join(input, 'bird.png'));
    await copyFile(HEAD, path.join(input, 'head.png'));
    const out = path.join(dir, 'batch');
    const r = await runCli([
      'batch',
      input,
      '-m',
      'digital-art-4x',
      '-s',
      '2',
      '--passes',
      '2',
      '-f',
      'jpg',
      '--out',
      out,
    ]);
    expect(r.code).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['bird_digital-art-4x_x4.jpg', 'head_digital-art-4x_x4.jpg']);
    expect((await sharp(path.join(out, 'head_digital-art-4x_x4.jpg')).metadata()).width).toBe(280);
  });

  it.each([
    [['--passes', '3'], "crisp: error: --passes must be an integer from 1 to 2, not '3'"],
    [
      ['--passes', '2', '--remote', 'http://127.0.0.1:9'],
      'crisp: error: --passes 2 (double upscale) runs on this computer only: a service upscales each image once per task. Drop --remote, or send the result through the service again.',
    ],
  ])('refuses %j in one line, before any work', async (args, message) => {
    const out = path.join(dir, 'refused');
    const r = await runCli(['upscale', BIRD, '-m', 'digital-art-4x', '--out', out, ...args], { CRISP_API_KEY: 'k' });
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual([message]);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });

  it('refuses before any work when the final image would be too large', async () => {
    // 600×600 at ×8 is 4800×4800 (fine); twice is 38 400×38 400, past the 2³⁰-pixel output limit.
    const big = path.join(dir, 'big.png');
    await writeFile(
      big,
      await sharp({ create: { width: 600, height: 600, channels: 3, background: '#808080' } })
        .png()
        .toBuffer(),
    );
    const out = path.join(dir, 'big-out');
    const r = await runCli(['upscale', big, '-m', 'digital-art-4x', '-s', '8', '--passes', '2', '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /upscaled twice at ×8 \(×64 in all\) would be 38400×38400 pixels, more than the 1074 megapixel output limit/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });
});
