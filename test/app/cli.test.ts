import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST_MODEL, listFiles, removeDir, tempDir } from '../helpers/engineHarness.js';
import { runCli } from '../helpers/runCli.js';
import type { TestServer } from '../server/helpers.js';
import { addUser, BIRD, makeBatch, startServer } from './appHelpers.js';

const crisp = runCli;

describe('crisp batch / crisp upscale --remote', () => {
  let server: TestServer;
  let dir: string;
  let key: string;
  let inputs: string;
  beforeAll(async () => {
    server = await startServer();
    key = await addUser(server, 'cli@example.com', 20);
    dir = await tempDir('crisp-app-cli-');
    inputs = path.join(dir, 'in');
    await mkdir(path.join(inputs, 'sub'), { recursive: true });
    await makeBatch(inputs, 2);
    await makeBatch(path.join(inputs, 'sub'), 1);
    await writeFile(path.join(inputs, 'notes.txt'), 'not an image');
  });
  afterAll(async () => {
    await server.stop();
    await removeDir(dir);
  });

  it('batch --remote --recursive: every image, template, credits, key from a file', async () => {
    const keyFile = path.join(dir, 'key.txt');
    await writeFile(keyFile, `${key}\n`, { mode: 0o600 });
    const out = path.join(dir, 'out-remote');
    const r = await crisp([
      'batch',
      inputs,
      '--recursive',
      '--remote',
      server.url,
      '--api-key-file',
      keyFile,
      '-m',
      FAST_MODEL,
      '-s',
      '2',
      '--template',
      '{name}-up{scale}.{ext}',
      '--out',
      out,
    ]);
    expect(r.stderr).toContain('crisp: Estimated cost: 3 credits for 3 images.');
    expect(r.stderr).toContain('crisp: balance: 20 credits');
    expect(r.stderr).toContain('crisp: 3 upscaled, 0 failed, 3 credits deducted (of 3).');
    expect(r.code).toBe(0);
    expect(await listFiles(out)).toEqual([
      'img01_baby_LRBI_x4-up2-2.png',
      'img01_baby_LRBI_x4-up2.png',
      'img02_bird_LRBI_x4-up2.png',
    ]);
    expect(r.stdout.split('\n').filter(Boolean)).toHaveLength(3);
    expect(`${r.stdout}${r.stderr}`).not.toContain(key);
  });

  it('batch (local worker) with --overwrite skip, then an unknown model fails with the message', async () => {
    const out = path.join(dir, 'out-local');
    const first = await crisp(['batch', inputs, '-m', FAST_MODEL, '-s', '2', '-f', 'jpg', '--out', out, '--ep', 'cpu']);
    expect(first.stderr).toContain('crisp: Local upscaling is free (2 images).');
    expect(first.code).toBe(0);
    expect(await listFiles(out)).toEqual([
      `img01_baby_LRBI_x4_${FAST_MODEL}_x2.jpg`,
      `img02_bird_LRBI_x4_${FAST_MODEL}_x2.jpg`,
    ]);
    const again = await crisp([
      'batch',
      inputs,
      '-m',
      FAST_MODEL,
      '-s',
      '2',
      '-f',
      'jpg',
      '--out',
      out,
      '--overwrite',
      'skip',
      '--ep',
      'cpu',
    ]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('0 upscaled, 0 failed, 2 skipped (of 2)');

    const bad = await crisp(['batch', inputs, '--remote', server.url, '-m', 'no-such-model', '-s', '2'], {
      CRISP_API_KEY: key,
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("crisp: error: --model: Unknown model 'no-such-model'.");
  });

  it('upscale --remote writes the output and reports credits; a missing key is a one-line error', async () => {
    const out = path.join(dir, 'out-one');
    await mkdir(out);
    // A user of its own: the batch test's balance does not depend on whether this one ran first.
    const own = await addUser(server, 'cli-one@example.com', 20);
    const r = await crisp(['upscale', BIRD, '--remote', server.url, '-m', FAST_MODEL, '-s', '3', '-o', out], {
      CRISP_API_KEY: own,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/→ .*bird_LRBI_x4_digital-art-4x_x3\.png \(216×216, .* 2 credits\)/);
    const meta = await sharp(path.join(out, `bird_LRBI_x4_${FAST_MODEL}_x3.png`)).metadata();
    expect([meta.width, meta.height]).toEqual([216, 216]);

    const noKey = await crisp(['upscale', BIRD, '--remote', server.url, '-m', FAST_MODEL], { CRISP_API_KEY: '' });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr.trim()).toBe(
      'crisp: error: --remote needs an API key: pass --api-key-file FILE or set CRISP_API_KEY',
    );
  });
});
