/**
 * Issue 17, run as a new user would: the real `crisp` (compiled, bin/crisp.js) as a child process.
 * Output folders are created or refused before any inference, errors are sentences (never raw Node text),
 * a folder given to `upscale` points to `batch`, imported models answer to their bare name, typos get
 * suggestions, and the shell niceties (completion, help with --json and exit codes) exist.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobReport } from '../../app/jobs/jobReport.js';
import { FAST_MODEL, listFiles, removeDir, tempDir } from '../helpers/engineHarness.js';
import { ONNX_DIR, REPO_ROOT } from '../helpers/paths.js';
import { runCli, type CliResult } from '../helpers/runCli.js';
import { BIRD } from '../app/appHelpers.js';

/** Raw error text that must never reach a person. */
const RAW = ['ENOENT', 'EACCES', 'ENOTDIR', 'EEXIST', 'node:internal', '    at ', 'TypeError', 'Error:'];

function expectNoRawText(r: CliResult): void {
  for (const raw of RAW) {
    expect(r.stderr).not.toContain(raw);
    expect(r.stdout).not.toContain(raw);
  }
}

describe('crisp: the first five minutes', () => {
  let dir: string;
  let home: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-first-');
    // Its own user data folder: the imported model below lands there and nowhere else.
    home = path.join(dir, 'home');
    await mkdir(home);
  });
  afterAll(async () => removeDir(dir));

  it('creates a nested --out (with its parents) and writes the output straight into it, once', async () => {
    const out = path.join(dir, 'results', 'today', 'x2');
    const data = path.join(dir, 'engine-data');
    const r = await runCli(['upscale', BIRD, '-m', FAST_MODEL, '-s', '2', '--out', out, '--data', data]);
    expect(r.code).toBe(0);
    expect(await readdir(out)).toEqual([`bird_LRBI_x4_${FAST_MODEL}_x2.png`]);
    const meta = await sharp(path.join(out, `bird_LRBI_x4_${FAST_MODEL}_x2.png`)).metadata();
    expect([meta.width, meta.height]).toEqual([144, 144]);
    // No copy of the output in the engine's task folders: it was written once, in the destination folder.
    const engineFiles = (await listFiles(data)).filter((f) => f.endsWith('.png'));
    expect(engineFiles.filter((f) => f.includes('outputs'))).toEqual([]);
  });

  it.each([
    ['a path under /proc', () => '/proc/crisp-nope/out', 'not-found'],
    ['a path under a file', () => path.join(dir, 'plain.txt', 'out'), 'not-a-folder'],
    ['a file', () => path.join(dir, 'plain.txt'), 'not-a-folder'],
  ])('refuses --out that is %s before any inference, in one sentence naming it', async (_what, outOf, code) => {
    await writeFile(path.join(dir, 'plain.txt'), 'not a folder');
    const out = outOf();
    const r = await runCli(['upscale', BIRD, '-m', FAST_MODEL, '-s', '1', '--out', out]);
    expect(r.code).toBe(1);
    expectNoRawText(r);
    const lines = r.stderr.split('\n').filter(Boolean);
    // The estimate line is printed when the run starts: its absence shows nothing ran.
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^crisp: error: (Cannot use the output folder|The output folder|Cannot create the output folder) /,
    );
    expect(lines[0]).toContain(out);

    const json = await runCli(['upscale', BIRD, '-m', FAST_MODEL, '-s', '1', '--out', out, '--json']);
    expect(json.code).toBe(1);
    const doc = JSON.parse(json.stdout) as JobReport;
    expect(doc.results).toEqual([]);
    expect(doc.error?.code).toBe(code);
    expect(doc.error?.message).toContain(out);
  });

  it('a folder given to upscale suggests crisp batch', async () => {
    const folder = path.join(dir, 'photos');
    await mkdir(folder, { recursive: true });
    const r = await runCli(['upscale', folder]);
    expect(r.code).toBe(1);
    expectNoRawText(r);
    expect(r.stderr.trim()).toBe(
      `crisp: error: ${folder} is a folder; crisp upscale takes image files. To upscale every image in it, run: crisp batch ${folder}`,
    );
  });

  it('an imported model answers to its bare name and to custom:name; a typo gets a suggestion', async () => {
    const env = { XDG_DATA_HOME: home };
    const imported = await runCli(
      ['models', 'import', path.join(ONNX_DIR, 'realesr-animevideov3.onnx'), '--name', 'mine'],
      env,
    );
    expect(imported.code).toBe(0);
    const out = path.join(dir, 'custom-out');
    const bare = await runCli(['upscale', BIRD, '-m', 'mine', '-s', '1', '--out', out], env);
    expect(bare.code).toBe(0);
    const prefixed = await runCli(
      ['upscale', BIRD, '-m', 'custom:mine', '-s', '1', '--out', out, '--overwrite', 'replace'],
      env,
    );
    expect(prefixed.code).toBe(0);
    // One model, one name however it was asked for.
    expect(await readdir(out)).toEqual(['bird_LRBI_x4_custom-mine_x1.png']);

    const typo = await runCli(['upscale', BIRD, '-m', 'mien'], env);
    expect(typo.code).toBe(1);
    expect(typo.stderr.trim()).toBe("crisp: error: --model: Unknown model 'mien'. Did you mean 'custom:mine'?");
    const catalogTypo = await runCli(['batch', dir, '-m', 'digtal-art-4x'], env);
    expect(catalogTypo.code).toBe(1);
    expect(catalogTypo.stderr.trim()).toBe(
      "crisp: error: --model: Unknown model 'digtal-art-4x'. Did you mean 'digital-art-4x'?",
    );
    expectNoRawText(typo);
  });

  it('a service that refuses the connection is named in a sentence, with a stable code in --json', async () => {
    const refused = 'http://127.0.0.1:9';
    const r = await runCli(
      ['upscale', BIRD, '-m', FAST_MODEL, '--remote', refused, '--out', path.join(dir, 'remote-out'), '--json'],
      { CRISP_API_KEY: 'k' },
    );
    expect(r.code).toBe(1);
    expectNoRawText(r);
    const doc = JSON.parse(r.stdout) as JobReport;
    expect(doc.results[0]?.error).toEqual({
      code: 'connection-refused',
      message: `Cannot reach the upscaling service at ${refused}: the connection was refused. Check the URL and that the service is running.`,
    });
  });

  it('starts light: before a command runs, the compiled CLI loads no npm package but commander', async () => {
    // Follows the static imports of out/cli/main.js (built by the test setup) through its chunks; dynamic
    // import() — how commands load onnxruntime, sharp, fastify, undici, zod, pg — is not followed.
    const outDir = path.join(REPO_ROOT, 'out/cli');
    const packages = new Set<string>();
    const seen = new Set<string>();
    const visit = async (file: string): Promise<void> => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = await readFile(path.join(outDir, file), 'utf8');
      for (const m of code.matchAll(/^import\s+(?:[^'";]*?\s+from\s+)?["']([^"']+)["'];?$/gms)) {
        const spec = m[1]!;
        if (spec.startsWith('./')) await visit(spec.slice(2));
        else if (!spec.startsWith('node:')) packages.add(spec);
      }
    };
    await visit('main.js');
    expect(seen.size).toBeGreaterThan(1);
    expect([...packages]).toEqual(['commander']);
  });

  it('help documents --json and exit codes; completion scripts cover every command', async () => {
    const help = await runCli(['help', 'upscale']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--json prints one document on stdout');
    expect(help.stdout).toMatch(/Exit codes:\n\s+0 /);
    expect(help.stdout).toContain('130');
    for (const shell of ['bash', 'zsh', 'fish']) {
      const r = await runCli(['completion', shell]);
      expect(r.code).toBe(0);
      for (const word of ['upscale', 'batch', 'serve', 'models', '--face-strength', '--precision', '--overwrite']) {
        expect(r.stdout).toContain(shell === 'fish' ? word.replace(/^--/, '-l ') : word);
      }
    }
    const bad = await runCli(['completion', 'tcsh']);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe("crisp: error: completion: unknown shell 'tcsh' (bash, zsh or fish)");
  });

  it('progress and notices go to stderr, results to stdout; NO_COLOR and pipes get no escape codes', async () => {
    const out = path.join(dir, 'streams');
    const r = await runCli(['upscale', BIRD, '-m', FAST_MODEL, '-s', '1', '--out', out, '--format', 'jpg'], {
      NO_COLOR: '1',
      FORCE_COLOR: '1',
    });
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toContain('→');
    expect(r.stderr).toContain('crisp: 1 upscaled, 0 failed (of 1).');
    expect(`${r.stdout}${r.stderr}`).not.toContain('\u001b[');
    const bad = await runCli(['upscale', BIRD, '-s', '0'], { NO_COLOR: '1', FORCE_COLOR: '1' });
    expect(bad.stderr).not.toContain('\u001b[');
    const coloured = await runCli(['upscale', BIRD, '-s', '0'], { FORCE_COLOR: '1', NO_COLOR: '' });
    expect(coloured.stderr).toContain('\u001b[31mcrisp: error:\u001b[0m');
  });
});
