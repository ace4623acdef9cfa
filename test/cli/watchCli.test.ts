/**
 * `crisp watch`: 30 images arrive (plain copies, some written in chunks with the writer pausing, some under a
 * temp name then renamed, some in a sub-folder), the watcher is held at a known point by the test-only gate
 * (CRISP_TEST_WATCH_GATE) after 10 images and killed there; more arrive while it is down; a restart upscales
 * the rest. Every image is upscaled exactly once, none twice, none missed; outputs (inside the watched folder)
 * never trigger themselves; temp names are never taken; a replaced image is upscaled again, once. A file
 * renamed mid-upscale (held by the test gate, engine/core/testGate.ts, before and after its pixels are read) is
 * upscaled once, under the name it started with, also after a restart; a killed `crisp watch` leaves its engine
 * process to exit quietly, with no stack trace on the terminal they share.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePoint, TEST_GATE_ENV } from '../../engine/core/testGate.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR, REPO_ROOT } from '../helpers/paths.js';
import { createTestGate, inputPoint } from '../helpers/testGate.js';
import { until } from '../helpers/until.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png'); // 72×72
const HOME = mkdtempSync(path.join(os.tmpdir(), 'crisp-home-'));

interface Watcher {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function startWatch(args: string[], env: Record<string, string>): Watcher {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/crisp.js'), 'watch', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, XDG_DATA_HOME: HOME, CRISP_MODELS_DIR: MODELS_DIR, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** A distinct small image: a crop of the bird, shifted per index, in the file's format. */
async function image(i: number, size = 24): Promise<Buffer> {
  const img = sharp(BIRD).extract({ left: (i * 5) % 40, top: (i * 3) % 40, width: size, height: size });
  const ext = i % 3;
  return ext === 0 ? img.png().toBuffer() : ext === 1 ? img.jpeg({ quality: 90 }).toBuffer() : img.webp().toBuffer();
}
const nameOf = (i: number) => `img${String(i).padStart(2, '0')}.${['png', 'jpg', 'webp'][i % 3]}`;

async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listTree(p)));
    else out.push(p);
  }
  return out;
}

/** A fast preset, "Tiny" (×1 through the smallest model, PNG), imported into `presetsFile`. */
async function importTinyPreset(presetsFile: string): Promise<void> {
  const tiny = {
    model: 'digital-art-4x',
    scale: 1,
    passes: 1,
    format: 'png',
    compression: 0,
    denoise: 1,
    face: false,
    faceModel: null,
    faceStrength: 1,
    outputFolder: '',
    template: '{name}_{model}_x{scale}.{ext}',
    metadata: 'keep',
    overwrite: 'keep',
    preModel: null,
  };
  const file = path.join(path.dirname(presetsFile), `tiny-${path.basename(presetsFile)}`);
  await writeFile(file, JSON.stringify({ crispPresets: 1, presets: [{ name: 'Tiny', options: tiny }] }));
  const imp = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/crisp.js'), 'presets', 'import', file], {
    env: { ...process.env, CRISP_PRESETS_FILE: presetsFile },
    stdio: 'ignore',
  });
  expect(await new Promise((r) => imp.on('exit', r))).toBe(0);
}

const doneLines = (text: string) => text.split('\n').filter((l) => l.includes(' → '));

describe('crisp watch', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-watch-');
  });
  afterAll(async () => {
    await removeDir(dir);
    await removeDir(HOME);
  });

  it('refuses, in a sentence and before watching, an outputs folder that is the watched one, or an unknown preset', async () => {
    const watched = path.join(dir, 'refusals');
    await mkdir(watched);
    const same = startWatch([watched, '--out', watched], {});
    expect(await same.exited).toBe(1);
    expect(same.stderr()).toBe(
      `crisp: error: The outputs folder cannot be the watched folder ${watched}: choose another with --out (default: ${path.join(watched, 'upscaled')}).\n`,
    );
    const unknown = startWatch([watched, '--preset', 'Posters'], {});
    expect(await unknown.exited).toBe(1);
    expect(unknown.stderr()).toMatch(/^crisp: error: --preset: There is no preset named "Posters"\./);
    const notDir = startWatch([path.join(watched, 'nope')], {});
    expect(await notDir.exited).toBe(1);
    expect(notDir.stderr()).toContain('is not a folder: crisp watch watches a folder for new images');
  });

  it('upscales 30 arriving images exactly once across a kill and a restart', async () => {
    const watched = path.join(dir, 'in');
    const outDir = path.join(watched, 'upscaled'); // inside the watched folder: must never trigger itself
    const gate = path.join(dir, 'gate');
    await mkdir(path.join(watched, 'sub'), { recursive: true });
    mkdirSync(gate);
    const env = { CRISP_PRESETS_FILE: path.join(dir, 'presets.json') };
    await importTinyPreset(env.CRISP_PRESETS_FILE);

    const args = [watched, '--recursive', '--preset', 'Tiny', '--out', outDir, '--poll', '40'];
    await writeFile(path.join(gate, 'allow'), '10');
    const first = startWatch(args, { ...env, CRISP_TEST_WATCH_GATE: gate });
    await until('the watcher to start', () => first.stderr().includes('crisp: watching'));

    // Written in chunks, the writer pausing: the first halves now, the rest only after the restart. Every
    // image below is seen complete in two scans after these halves exist, so by the time 10 images are done the
    // halves have been looked at stable and incomplete, and not taken.
    const slow = [0, 1, 2].map((i) => ({ i, file: path.join(watched, nameOf(i)) }));
    const halves = await Promise.all(
      slow.map(async ({ i, file }) => {
        const bytes = await image(i);
        const fh = await open(file, 'w');
        await fh.write(bytes.subarray(0, bytes.length >> 1));
        return { fh, rest: bytes.subarray(bytes.length >> 1) };
      }),
    );
    // Plain copies, some in a sub-folder.
    for (let i = 3; i < 17; i++)
      await writeFile(path.join(watched, i % 4 === 0 ? 'sub' : '', nameOf(i)), await image(i));
    // Under a temp name of a common app, then renamed.
    const temps = ['.img17.png.XYZ123', 'img18.jpg.crdownload', 'img19.webp.part'];
    for (const [k, t] of temps.entries()) {
      await writeFile(path.join(watched, t), await image(17 + k));
      await rename(path.join(watched, t), path.join(watched, nameOf(17 + k)));
    }
    // Temp names that are never renamed are never taken.
    await writeFile(path.join(watched, 'stray.png.part'), await image(40));
    await writeFile(path.join(watched, '~$stray.png'), await image(41));

    // Held before its 11th image: exactly 10 done, then killed there.
    await until('the gate', async () => (await readFile(path.join(gate, 'reached'), 'utf8').catch(() => '')) === '11');
    expect(doneLines(first.stdout())).toHaveLength(10);
    first.child.kill('SIGKILL');
    await first.exited;

    // While it is down: the halves are finished, and 10 more arrive (one more in chunks, one via a temp name).
    for (const h of halves) {
      await h.fh.write(h.rest);
      await h.fh.close();
    }
    for (let i = 20; i < 28; i++)
      await writeFile(path.join(watched, i % 4 === 0 ? 'sub' : '', nameOf(i)), await image(i));
    await writeFile(path.join(watched, 'img28.png.tmp'), await image(28));
    await rename(path.join(watched, 'img28.png.tmp'), path.join(watched, nameOf(28)));
    const late = await image(29);
    const fh = await open(path.join(watched, nameOf(29)), 'w');
    await fh.write(late.subarray(0, 100));

    const second = startWatch(args, env);
    await until('the restarted watcher to start', () => second.stderr().includes('crisp: watching'));
    await fh.write(late.subarray(100));
    await fh.close();
    await until('30 images upscaled', () => doneLines(first.stdout() + second.stdout()).length >= 30);

    // A replaced image (another size) is new work: upscaled once more, its output replaced.
    await writeFile(path.join(watched, nameOf(5)), await image(5, 32));
    await until('the replaced image', () => doneLines(first.stdout() + second.stdout()).length >= 31);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.stderr()).toMatch(/crisp: stopped watching: 31 upscaled, 0 failed in all\.\n$/);

    const lines = doneLines(first.stdout() + second.stdout());
    expect(lines).toHaveLength(31);
    const inputs = lines.map((l) => path.relative(watched, l.split(' → ')[0]!));
    const expected = Array.from({ length: 30 }, (_v, i) =>
      path.join(i % 4 === 0 && i >= 3 && i !== 28 ? 'sub' : '', nameOf(i)),
    );
    expect([...new Set(inputs)].sort()).toEqual(expected.sort());
    const times = (rel: string) => inputs.filter((x) => x === rel).length;
    for (const rel of expected) expect(times(rel), rel).toBe(rel === nameOf(5) ? 2 : 1);

    // Exactly one output per input, beside nothing else but the journal; none made from an output.
    const outputs = (await listTree(outDir)).map((p) => path.relative(outDir, p)).sort();
    const wanted = expected.map((rel) => rel.replace(/\.(png|jpg|webp)$/, '_digital-art-4x_x1.png'));
    expect(outputs).toEqual([...wanted, '.crisp-watch.jsonl'].sort());
    for (const rel of wanted) {
      const m = await sharp(path.join(outDir, rel)).metadata();
      expect([m.format, m.width], rel).toEqual([
        'png',
        rel === nameOf(5).replace(/\.\w+$/, '_digital-art-4x_x1.png') ? 32 : 24,
      ]);
    }
  });

  it('upscales a file renamed mid-upscale once, under the name it started with, also after a restart', async () => {
    const watched = path.join(dir, 'renames');
    const outDir = path.join(watched, 'upscaled');
    await mkdir(watched);
    const env = { CRISP_PRESETS_FILE: path.join(dir, 'rename-presets.json') };
    await importTinyPreset(env.CRISP_PRESETS_FILE);
    const gate = await createTestGate();
    const args = [watched, '--preset', 'Tiny', '--out', outDir, '--poll', '40'];
    const first = startWatch(args, { ...env, [TEST_GATE_ENV]: gate.dir });
    try {
      await until('the watcher to start', () => first.stderr().includes('crisp: watching'));
      // Renamed once its pixels were read (held as its encode starts, before its metadata is read) and before
      // anything of it was read (held as its job starts).
      for (const [i, point] of [
        [0, encodePoint],
        [1, inputPoint],
      ] as const) {
        const name = nameOf(i);
        await gate.hold(point(name));
        await writeFile(path.join(watched, name), await image(i));
        await gate.reached(point(name));
        await rename(path.join(watched, name), path.join(watched, `renamed-${name}`));
        await gate.release(point(name));
        await until(`${name} upscaled`, () => doneLines(first.stdout()).length > i);
      }
      // Two more, one after the other: the second is first seen after the look that took the first is over, so
      // by then every look that could take a renamed file has been made.
      for (const i of [2, 3]) {
        await writeFile(path.join(watched, nameOf(i)), await image(i));
        await until(`${nameOf(i)} upscaled`, () => doneLines(first.stdout()).length > i);
      }
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    } finally {
      first.child.kill('SIGKILL');
      await gate.close();
    }
    const inputsOf = (text: string) => doneLines(text).map((l) => path.relative(watched, l.split(' → ')[0]!));
    expect(inputsOf(first.stdout())).toEqual([0, 1, 2, 3].map(nameOf));
    expect(first.stderr()).toMatch(/crisp: stopped watching: 4 upscaled, 0 failed in all\.\n$/);
    expect(first.stderr()).not.toContain('error');

    // The journal knows the renamed files by what they are, not by their names: a restart skips them too.
    const second = startWatch(args, env);
    await until('the restarted watcher to start', () => second.stderr().includes('crisp: watching'));
    for (const [k, i] of [4, 5].entries()) {
      await writeFile(path.join(watched, nameOf(i)), await image(i));
      await until(`${nameOf(i)} upscaled`, () => doneLines(second.stdout()).length > k);
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(inputsOf(second.stdout())).toEqual([4, 5].map(nameOf));
    expect(second.stderr()).toMatch(/crisp: stopped watching: 6 upscaled, 0 failed in all\.\n$/);

    // One output per image, under the name its upscale started with; no reading link left behind.
    const outputs = (await listTree(outDir)).map((p) => path.relative(outDir, p)).sort();
    const wanted = [0, 1, 2, 3, 4, 5].map((i) => nameOf(i).replace(/\.\w+$/, '_digital-art-4x_x1.png'));
    expect(outputs).toEqual([...wanted, '.crisp-watch.jsonl'].sort());
  });

  it('killed, leaves its engine process to exit quietly: no stack trace on the terminal they share', async () => {
    const watched = path.join(dir, 'killed');
    await mkdir(watched);
    const env = { CRISP_PRESETS_FILE: path.join(dir, 'killed-presets.json') };
    await importTinyPreset(env.CRISP_PRESETS_FILE);
    const gate = await createTestGate();
    const point = inputPoint(nameOf(0));
    const w = startWatch([watched, '--preset', 'Tiny', '--poll', '40'], { ...env, [TEST_GATE_ENV]: gate.dir });
    // The engine process writes to the same stderr pipe (workerSpawner.ts inherits it): the pipe closes once
    // both processes are gone.
    let closed = false;
    w.child.stderr!.on('close', () => (closed = true));
    try {
      await until('the watcher to start', () => w.stderr().includes('crisp: watching'));
      await gate.hold(point);
      await writeFile(path.join(watched, nameOf(0)), await image(0));
      const enginePid = await gate.reached(point); // mid-upscale, in the engine process
      expect(enginePid).not.toBe(w.child.pid);
      const before = w.stderr().length;
      w.child.kill('SIGKILL');
      await w.exited;
      // Let the orphaned job go on: it would answer an app that is gone.
      await gate.release(point);
      await until('the engine process to exit', () => closed);
      expect(w.stderr().slice(before)).toBe('');
    } finally {
      w.child.kill('SIGKILL');
      await gate.close();
    }
  });
});
