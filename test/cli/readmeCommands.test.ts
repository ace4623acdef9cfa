/**
 * README's "Command line" examples, run as written (issue 17: every README command works): each `crisp …`
 * line of that section's first code block runs in a folder holding the files it names (photo.jpg, a.png,
 * b.webp made from a Set5 image), and must succeed. Output redirections (`> file`) go to a temp file.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { runCli } from '../helpers/runCli.js';
import { BIRD } from '../app/appHelpers.js';

async function commandLineExamples(): Promise<string[][]> {
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Command line'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l.startsWith('crisp '))
    .map((l) => l.split(/\s+/).slice(1));
}

describe("README's command line examples", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-readme-');
    await sharp(BIRD).jpeg().toFile(path.join(dir, 'photo.jpg'));
    await sharp(BIRD).png().toFile(path.join(dir, 'a.png'));
    await sharp(BIRD).webp().toFile(path.join(dir, 'b.webp'));
  });
  afterAll(async () => removeDir(dir));

  it('each one runs as written and succeeds', async () => {
    const examples = await commandLineExamples();
    expect(examples.length).toBeGreaterThanOrEqual(5);
    for (const args of examples) {
      const redirect = args.indexOf('>');
      const argv = redirect >= 0 ? args.slice(0, redirect) : args;
      const r = await runCli(argv, {}, { cwd: dir });
      expect({ args, code: r.code, stderr: r.stderr.split('\n').filter((l) => l.includes('error')) }).toEqual({
        args,
        code: 0,
        stderr: [],
      });
      if (redirect >= 0) await writeFile(path.join(dir, 'redirected.txt'), r.stdout);
    }
    // The first example wrote into upscaled/, made on the way.
    const out = await sharp(path.join(dir, 'upscaled', 'photo_crystal-plus-4x_x4.png')).metadata();
    expect([out.width, out.height]).toEqual([288, 288]);
  });
});
