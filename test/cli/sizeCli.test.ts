/**
 * Exact output geometry on the command line (issue 41 item 1): --width, --height, both (a box), --long-side,
 * through `upscale`, `batch` and a preset; sizes that cannot be met are refused in one sentence before any work.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobReport } from '../../app/jobs/jobReport.js';
import { BUILT_IN_PRESETS } from '../../app/settings/presets.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');

describe('crisp --width / --height / --long-side', () => {
  let dir: string;
  /** 72×50: not square, so the free side is rounded. */
  let input: string;
  const w = 72;
  const h = 50;
  beforeAll(async () => {
    dir = await tempDir();
    input = path.join(dir, 'wide.png');
    await sharp(BIRD).extract({ left: 0, top: 0, width: w, height: h }).png().toFile(input);
  });
  afterAll(async () => removeDir(dir));

  async function sizeOf(out: string): Promise<[number, number]> {
    const [file] = await readdir(out);
    const m = await sharp(path.join(out, file!)).metadata();
    return [m.width, m.height];
  }

  it.each([
    // --width W gives exactly W × round(h·W/w); the model runs at its native ×4 and one resample lands on it.
    ['width', ['--width', '100'], [100, Math.round((h * 100) / w)]],
    // 432×300 needs ×6: the model's ×4 does not reach it, so the tiles go to ×6, which is already exact.
    ['height', ['--height', '300'], [Math.round((w * 300) / h), 300]],
    // A box: the side that limits first is exact, the other fits inside.
    ['box', ['--width', '200', '--height', '100'], [Math.round((w * 100) / h), 100]],
    ['long side', ['--long-side', '250'], [250, Math.round((h * 250) / w)]],
  ])('upscale --%s gives exactly that size', async (name, args, expected) => {
    const out = path.join(dir, `up-${name.replace(' ', '-')}`);
    const r = await runCli(['upscale', input, '-m', 'digital-art-4x', ...(args as string[]), '-o', out, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as JobReport;
    expect(doc.results[0]).toMatchObject({ status: 'done', width: expected[0], height: expected[1] });
    expect(await sizeOf(out)).toEqual(expected);
    // Named by the size it has, not by a scale nobody asked for.
    expect(await readdir(out)).toEqual([`wide_digital-art-4x_${expected[0]}x${expected[1]}.png`]);
  });

  it('batch --long-side sizes every image by its own longer side; a preset carries the size', async () => {
    const folder = path.join(dir, 'folder');
    await mkdir(folder);
    await sharp(input).rotate(90).toFile(path.join(folder, 'tall.png'));
    await sharp(input).toFile(path.join(folder, 'wide.png'));
    const out = path.join(dir, 'batch');
    const r = await runCli(['batch', folder, '-m', 'digital-art-4x', '--long-side', '120', '-f', 'jpg', '-o', out]);
    expect(r.code).toBe(0);
    const files = (await readdir(out)).sort();
    const dims = await Promise.all(files.map(async (f) => (await sharp(path.join(out, f)).metadata()).width));
    const heights = await Promise.all(files.map(async (f) => (await sharp(path.join(out, f)).metadata()).height));
    expect(files.map((f, i) => `${f}:${dims[i]}x${heights[i]}`)).toEqual([`${files[0]}:83x120`, `${files[1]}:120x83`]);

    // A preset with a width: `--preset` applies it; a geometry flag replaces it.
    const presets = path.join(dir, 'presets.json');
    const options = {
      ...BUILT_IN_PRESETS[1]!.options,
      model: 'digital-art-4x',
      width: 90,
      height: null,
      longSide: null,
    };
    await writeFile(
      presets,
      JSON.stringify({ version: 1, presets: [{ name: 'Web 90', options }], defaultPreset: 'Photos' }),
    );
    const env = { CRISP_PRESETS_FILE: presets };
    const viaPreset = path.join(dir, 'preset');
    expect((await runCli(['upscale', input, '--preset', 'Web 90', '-o', viaPreset], env)).code).toBe(0);
    expect(await sizeOf(viaPreset)).toEqual([90, Math.round((h * 90) / w)]);
    const scaled = path.join(dir, 'preset-scaled');
    expect((await runCli(['upscale', input, '--preset', 'Web 90', '-s', '2', '-o', scaled], env)).code).toBe(0);
    expect(await sizeOf(scaled)).toEqual([w * 2, h * 2]);
  });

  it.each([
    [['--width', '0'], "crisp: error: --width must be an integer from 1 to 65535, not '0'"],
    [['--height', '-5'], "crisp: error: --height must be an integer from 1 to 65535, not '-5'"],
    [['--long-side', '70000'], "crisp: error: --long-side must be an integer from 1 to 65535, not '70000'"],
    [['--width', 'wide'], "crisp: error: --width must be an integer from 1 to 65535, not 'wide'"],
    [
      ['--long-side', '100', '--width', '50'],
      'crisp: error: --long-side sets both sides already: give it alone, or --width and/or --height instead.',
    ],
    [
      ['--scale', '2', '--width', '100'],
      'crisp: error: --scale and an exact size (--width, --height, --long-side) both set the output size: give one of them.',
    ],
    [
      ['--passes', '2', '--width', '100'],
      'crisp: error: --passes 2 and an exact size (--width, --height, --long-side) cannot be combined: the size chooses the model pass itself. Give one of them.',
    ],
  ])('refuses %j in one sentence, before any work', async (args, message) => {
    const out = path.join(dir, 'refused');
    const r = await runCli(['upscale', input, '-m', 'digital-art-4x', '-o', out, ...args]);
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual([message]);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });

  it.each([
    // 65535 wide is 65535×45510: over the output pixel limit, named.
    [['--width', '65535'], /would be 65535×45510 pixels, more than the 1074 megapixel output limit/],
    // WebP holds 16383 a side.
    [['--width', '20000', '-f', 'webp'], /WEBP holds at most 16383 pixels a side/],
    // 72 → 1000 wide is ×14: more than one pass reaches.
    [['--width', '1000'], /would take ×14, more than the ×8 Crisp upscales in one pass/],
  ])('refuses %j up front, naming the limit', async (args, message) => {
    const out = path.join(dir, 'too-big');
    const r = await runCli(['upscale', input, '-m', 'digital-art-4x', '-o', out, ...(args as string[])]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message as RegExp);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });
});
