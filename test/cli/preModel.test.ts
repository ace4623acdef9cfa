/**
 * `crisp upscale --pre-model`: an imported 1× restoration model runs before the upscaler in one job; the result
 * equals running the two models one after the other; an upscaler as the pre-model is refused before any work.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { nearIdentity } from '../convert/support/reference.js';
import { writeSafetensors } from '../convert/support/torchWriters.js';
import { FAST_MODEL } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');
const dir = mkdtempSync(path.join(os.tmpdir(), 'crisp-pre-model-'));
// Its own user data folder, so the imported model is found by name and nothing leaks into other tests.
const env = { XDG_DATA_HOME: path.join(dir, 'home') };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const onlyFile = (folder: string) => {
  const files = readdirSync(folder);
  expect(files).toHaveLength(1);
  return path.join(folder, files[0]!);
};

describe('crisp upscale --pre-model', () => {
  it('restores then upscales in one job, as the two models one after the other', async () => {
    const ckpt = path.join(dir, '1x-restore.safetensors');
    writeFileSync(ckpt, writeSafetensors(nearIdentity()));
    const imp = await runCli(['models', 'import', ckpt, '--name', 'restore'], env);
    expect(imp.code, imp.stdout + imp.stderr).toBe(0);

    const chained = path.join(dir, 'chained');
    const r = await runCli(
      ['upscale', BIRD, '-m', FAST_MODEL, '-s', '2', '--pre-model', 'restore', '--out', chained],
      env,
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);

    const restored = path.join(dir, 'restored');
    expect((await runCli(['upscale', BIRD, '-m', 'restore', '-s', '1', '--out', restored], env)).code).toBe(0);
    const twoSteps = path.join(dir, 'two-steps');
    const second = await runCli(['upscale', onlyFile(restored), '-m', FAST_MODEL, '-s', '2', '--out', twoSteps], env);
    expect(second.code).toBe(0);

    const a = await sharp(onlyFile(chained)).raw().toBuffer({ resolveWithObject: true });
    const b = await sharp(onlyFile(twoSteps)).raw().toBuffer({ resolveWithObject: true });
    expect([a.info.width, a.info.height]).toEqual([144, 144]);
    expect(a.data.equals(b.data)).toBe(true);
  }, 180_000);

  it('refuses an upscaler as the pre-model in one line, before any work', async () => {
    const out = path.join(dir, 'refused');
    const r = await runCli(
      ['upscale', BIRD, '-m', FAST_MODEL, '-s', '2', '--pre-model', FAST_MODEL, '--out', out],
      env,
    );
    expect(r.code).not.toBe(0);
    const errors = crispLines(r.stderr).filter((l) => l.startsWith('crisp: error:'));
    expect(errors.join('\n')).toContain(
      `${FAST_MODEL} upscales ×4; the model run before the upscaler must be a 1× restoration model`,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(readdirSync(out).filter((f) => f.endsWith('.png'))).toEqual([]);
  }, 60_000);
});
