/**
 * Adding user-given paths never waits on something that cannot answer (issue 26): a named pipe is refused
 * at once instead of being opened (opening one for reading waits for a writer forever), in a folder it is
 * skipped, and real images beside it are still found.
 */
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandInputs } from '../../app/jobs/inputs.js';
import { IMAGES_DIR } from '../helpers/paths.js';

const BIRD = path.join(IMAGES_DIR, 'set5', 'bird.png');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-input-probes-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(process.platform === 'win32')('input probes', () => {
  it('refuses a named pipe at once and skips one inside a folder, keeping the images', async () => {
    const folder = path.join(dir, 'folder');
    await mkdir(folder);
    const fifo = path.join(dir, 'pipe.png');
    execFileSync('mkfifo', [fifo]);
    execFileSync('mkfifo', [path.join(folder, 'also-a-pipe.png')]);
    await copyFile(BIRD, path.join(folder, 'bird.png'));

    expect(await expandInputs([fifo, folder], true)).toEqual([
      { path: fifo, problem: 'pipe.png is not a JPG, PNG or WEBP image.', problemCode: 'not-an-image' },
      { path: path.join(folder, 'bird.png') },
    ]);
  });
});
