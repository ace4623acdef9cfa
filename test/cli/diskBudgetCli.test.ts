/** The CLI side of the disk budget: a job that cannot fit is refused with one clear line, exit 1, nothing written. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');

describe('crisp upscale and the disk budget', () => {
  let out: string;
  beforeAll(async () => {
    out = await tempDir();
  });
  afterAll(async () => removeDir(out));

  it('refuses a job that does not fit the free disk (here: a reserve larger than any disk), exit 1, no file', async () => {
    const r = await runCli(['upscale', BIRD, '--model', 'digital-art-4x', '--scale', '4', '--out', out], {
      CRISP_DISK_RESERVE_BYTES: String(2 ** 60),
    });
    expect(r.code).toBe(1);
    // One error line (the others are the run's summary), naming the --out folder, never an internal one.
    const errors = crispLines(r.stderr).filter((l) => l.startsWith('crisp: error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(
      `Not enough free disk space to upscale "bird_LRBI_x4.png": its output needs about 1 MB in ${out}, but only `,
    );
    expect(errors[0]).toMatch(/is free \(1152921504\.6 GB is kept in reserve\)\. Free some space/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(await readdir(out)).toEqual([]);
  });
});
