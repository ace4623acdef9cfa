/**
 * Issue 38: `crisp upscale … --json` gives each failure its own catalog code — the code core (or the app's
 * probe) raised, carried across the engine process by core's error wire — never one rebuilt from an HTTP
 * status (`bad-request`) or a catch-all (`internal`).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobReport } from '../../app/jobs/jobReport.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');

describe('crisp upscale --json: one catalog code per failure', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-error-codes-');
  });
  afterAll(async () => removeDir(dir));

  async function failure(args: string[], env: Record<string, string> = {}) {
    const r = await runCli(['upscale', ...args, '--out', path.join(dir, 'out'), '--json'], env);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as JobReport;
    return report.results[0]?.error ?? report.error;
  }

  it('a damaged PNG: damaged-image, naming the damage', async () => {
    const damaged = path.join(dir, 'damaged.png');
    const png = await readFile(BIRD);
    await writeFile(damaged, png.subarray(0, Math.floor(png.length / 2)));
    expect(await failure([damaged, '-m', 'digital-art-4x'])).toEqual({
      code: 'damaged-image',
      message: 'damaged.png is damaged (the PNG data is cut short): re-export or download it again, then add it anew.',
    });
  });

  it('a catalog model that is not installed: model-not-installed', async () => {
    // The test models folder holds four of the catalog's models; service-standard-4x is not one of them.
    const e = await failure([BIRD, '-m', 'service-standard-4x']);
    expect(e?.code).toBe('model-not-installed');
    expect(e?.message).toMatch(/^Model 'service-standard-4x' \(RealESRGAN_x4plus\) is not installed\. /);
  });

  it('an unknown model: unknown-model', async () => {
    const e = await failure([BIRD, '-m', 'nonsense-4x']);
    expect(e?.code).toBe('unknown-model');
  });

  it('a disk-budget refusal: not-enough-space, with the sizes in its sentence', async () => {
    const e = await failure([BIRD, '-m', 'digital-art-4x'], { CRISP_DISK_RESERVE_BYTES: String(2 ** 60) });
    expect(e?.code).toBe('not-enough-space');
    expect(e?.message).toMatch(/^Not enough free disk space to upscale "bird_LRBI_x4\.png": its output needs about /);
  });
});
