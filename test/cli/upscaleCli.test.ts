import { createHash } from 'node:crypto';
import { copyFile, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobReport } from '../../app/jobs/jobReport.js';
import { MODEL_NAMES } from '../../engine/contract/index.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, REPO_ROOT } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');

describe('crisp CLI', () => {
  let out: string;
  beforeAll(async () => {
    out = await tempDir();
  });
  afterAll(async () => removeDir(out));

  it('upscale writes the output with a clear name and prints one line', async () => {
    const r = await runCli([
      'upscale',
      BIRD,
      '--model',
      'digital-art-4x',
      '--scale',
      '3',
      '--format',
      'webp',
      '--out',
      out,
    ]);
    expect(r.code).toBe(0);
    const target = path.join(out, 'bird_LRBI_x4_digital-art-4x_x3.webp');
    expect(r.stdout.trim()).toMatch(
      new RegExp(
        `^${BIRD.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} → ${target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(216×216, `,
      ),
    );
    const meta = await sharp(target).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([216, 216, 'webp']);
    expect((await readdir(out)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('upscale --json prints the one result document', async () => {
    const r = await runCli([
      'upscale',
      BIRD,
      '--model',
      'digital-art-4x',
      '--scale',
      '1',
      '--format',
      'jpg',
      '--out',
      out,
      '--json',
    ]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as JobReport;
    expect(doc.upscaled).toBe(1);
    expect(doc.error).toBeNull();
    expect(doc.results[0]).toMatchObject({
      status: 'done',
      width: 72,
      height: 72,
      creditsDeducted: 0,
      // auto picks int8 only on a CPU with int8 dot products and a checked variant: either is right here.
      // and why: no GPU provider works here, or (where one does) an 18×18 image is too small to start it.
      device: {
        provider: 'cpu',
        precision: expect.stringMatching(/^(fp32|int8)$/),
        reason: expect.stringMatching(/^cpu: (auto found no GPU provider|this job runs about .* sooner on the CPU)/),
      },
      error: null,
    });
    expect(doc.results[0]!.output).toBe(path.join(out, 'bird_LRBI_x4_digital-art-4x_x1.jpg'));
    expect(doc.results[0]!.fileSize).toBe((await stat(doc.results[0]!.output!)).size);
  });

  it('upscale --json says the provider was asked for when --ep names it; fp16 on the CPU runs fp32 and says why', async () => {
    const r = await runCli([
      'upscale',
      BIRD,
      '--model',
      'digital-art-4x',
      '--ep',
      'cpu',
      '--precision',
      'fp16',
      '--out',
      out,
      '--json',
    ]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as JobReport;
    expect(doc.results[0]!.device).toEqual({
      provider: 'cpu',
      precision: 'fp32',
      reason: 'cpu: the execution provider asked for.',
    });
    expect(r.stderr).toContain(
      'Crisp: running realesr-animevideov3 in fp32 instead of fp16: fp16 is for GPU providers; on the CPU provider onnxruntime computes it in fp32 anyway.',
    );
  });

  it('the default model is the best installed photo model', async () => {
    const r = await runCli(['upscale', BIRD, '--scale', '1', '--out', out, '--json']);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as JobReport).results[0]!.output).toMatch(/_crystal-plus-4x_x1\.png$/);
  });

  it.each([
    [['--scale', '9'], "crisp: error: --scale must be an integer from 1 to 8, not '9'"],
    [['--format', 'gif'], "crisp: error: --format must be one of jpg, png, webp, not 'gif'"],
    [['--model', 'nope-4x'], /^crisp: error: --model: Unknown model 'nope-4x'\./],
    [['--ep', 'tpu'], "crisp: error: --ep must be one of auto, cpu, webgpu, cuda, dml, coreml, not 'tpu'"],
  ])('refuses %j with one clear line and exit code 1', async (args, message) => {
    const r = await runCli(['upscale', BIRD, '--out', out, ...args]);
    expect(r.code).toBe(1);
    const lines = crispLines(r.stderr);
    expect(lines).toHaveLength(1);
    if (typeof message === 'string') expect(lines[0]).toBe(message);
    else expect(lines[0]).toMatch(message);
  });

  it('usage errors read like every other error', async () => {
    const missing = await runCli(['upscale']);
    expect(missing.code).toBe(1);
    expect(crispLines(missing.stderr)).toEqual(["crisp: error: missing required argument 'file'"]);
    const unknown = await runCli(['upscale', BIRD, '--bogus']);
    expect(unknown.code).toBe(1);
    expect(crispLines(unknown.stderr)).toEqual(["crisp: error: unknown option '--bogus'"]);
  });

  it('a bad file fails alone: the good one is still written, exit code 1', async () => {
    const bad = path.join(out, 'notes.jpg');
    await writeFile(bad, 'not an image');
    const dir = await tempDir();
    try {
      const r = await runCli(['upscale', bad, BIRD, '--model', 'digital-art-4x', '--scale', '2', '--out', dir]);
      expect(r.code).toBe(1);
      expect(crispLines(r.stderr).filter((l) => l.startsWith('crisp: error:'))).toEqual([
        `crisp: error: ${bad}: notes.jpg is not a JPG, PNG or WEBP image.`,
      ]);
      expect(await readdir(dir)).toEqual(['bird_LRBI_x4_digital-art-4x_x2.png']);
    } finally {
      await removeDir(dir);
    }
  });

  it('models list shows every contract model with its open model and whether it is installed', async () => {
    const r = await runCli(['models', 'list', '--json']);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<{ name: string; model: string; licence: string; installed: boolean }>;
    expect(rows.map((x) => x.name).sort()).toEqual([...MODEL_NAMES].sort());
    const installed = rows
      .filter((x) => x.installed)
      .map((x) => x.model)
      .sort();
    expect(installed).toEqual([
      '4xLSDIRCompactC3',
      'realesr-animevideov3',
      'realesr-general-wdn-x4v3',
      'realesr-general-x4v3',
    ]);
    for (const row of rows) expect(row.licence).not.toBe('');
    const table = await runCli(['models', 'list']);
    expect(table.stdout).toMatch(/crystal-plus-4x\s+4xLSDIRCompactC3\s+SRVGGNetCompact\s+CC-BY-4.0\s+installed/);
    expect(table.stdout).toMatch(/service-standard-4x\s+RealESRGAN_x4plus\s+RRDBNet\s+BSD-3-Clause\s+not installed/);
  });

  it('models list shows the fp16 status of each model: measured and passed, below the bar, or none for a stale manifest', async () => {
    const bundled = path.join(REPO_ROOT, 'resources', 'models');
    const dir = await tempDir('crisp-fp16-list-');
    try {
      // Bundled: service-lite-4x's manifest passed (GPU); in the folder: clear-boost's one below the bar, and
      // crystal-plus's one stale (measured on another graph), which must not count.
      const manifest = JSON.parse(await readFile(path.join(bundled, 'realesr-general-x4v3.fp16.json'), 'utf8')) as {
        source: { file: string; sha256: string; bytes: number };
        graphSha256: string;
        worstPsnrY: number;
        passed: boolean;
      };
      const place = async (file: string, edit: (m: typeof manifest, sha: string, bytes: number) => void) => {
        await copyFile(path.join(bundled, 'realesr-general-x4v3.onnx'), path.join(dir, file));
        const bytes = await readFile(path.join(dir, file));
        const m = structuredClone(manifest);
        edit(m, createHash('sha256').update(bytes).digest('hex'), bytes.length);
        await writeFile(path.join(dir, file.replace(/\.onnx$/, '.fp16.json')), JSON.stringify(m));
      };
      // Both copies hold service-lite's weights, so the fp16 graph is the one its manifest measured.
      await place('realesr-general-wdn-x4v3.onnx', (m, sha, bytes) => {
        m.source = { file: 'realesr-general-wdn-x4v3.onnx', sha256: sha, bytes };
        m.worstPsnrY = 41.2;
        m.passed = false;
      });
      await place('4xLSDIRCompactC3.onnx', (m, sha, bytes) => {
        m.source = { file: '4xLSDIRCompactC3.onnx', sha256: sha, bytes };
        m.graphSha256 = '0'.repeat(64);
      });
      const r = await runCli(['models', 'list', '--json'], { CRISP_MODELS_DIR: dir });
      expect(r.code).toBe(0);
      const rows = JSON.parse(r.stdout) as Array<{
        name: string;
        fp16: { worstPsnrY: number; passed: boolean } | null;
      }>;
      const fp16 = Object.fromEntries(rows.map((x) => [x.name, x.fp16]));
      expect(fp16['service-lite-4x']).toMatchObject({ worstPsnrY: manifest.worstPsnrY, passed: true });
      expect(fp16['clear-boost-4x']).toMatchObject({ worstPsnrY: 41.2, passed: false });
      expect(fp16['crystal-plus-4x']).toBeNull();
      expect(fp16['service-standard-4x']).toBeNull();
      const table = (await runCli(['models', 'list'], { CRISP_MODELS_DIR: dir })).stdout;
      expect(table).toMatch(/service-lite-4x\s.*\sGPU \(96\.8 dB\)/);
      expect(table).toMatch(/clear-boost-4x\s.*\sbelow bar \(41\.2 dB\)/);
    } finally {
      await removeDir(dir);
    }
  });
});
