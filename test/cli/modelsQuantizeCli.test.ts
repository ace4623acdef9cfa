import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');

describe('crisp models quantize and --precision', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(async () => removeDir(dir));

  it.each([
    [
      ['models', 'quantize', 'nope-4x'],
      `crisp: error: 'nope-4x' is neither a model name nor an .onnx file. "crisp models list" shows the model names.`,
    ],
    [
      ['models', 'quantize', 'digital-art-4x', '--calibration', '/no/such/folder'],
      'crisp: error: Cannot read the calibration folder /no/such/folder. Pass a folder of JPG, PNG or WebP photos with --calibration.',
    ],
    [
      ['upscale', BIRD, '--precision', 'bf16'],
      "crisp: error: --precision must be one of auto, fp32, int8, fp16, not 'bf16'",
    ],
  ])('refuses %j with one clear line and exit code 1', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual([message]);
  });

  it('quantizes a model, lists it, and --precision int8 on a CPU without VNNI runs fp32 with a notice', async () => {
    const int8 = path.join(dir, 'int8');
    const q = await runCli([
      'models',
      'quantize',
      'digital-art-4x',
      '--calibration',
      path.join(IMAGES_DIR, 'set5'),
      '--crops',
      '8',
      '--out',
      int8,
      '--json',
    ]);
    expect(q.code, q.stderr).toBe(0);
    const manifest = JSON.parse(q.stdout) as {
      path: string;
      source: { file: string };
      quantizedConvs: number;
      calibration: { kind: string; crops: number };
      psnrYVsFp32: number;
      passed: boolean;
    };
    expect(manifest).toMatchObject({
      path: path.join(int8, 'realesr-animevideov3.int8.onnx'),
      source: { file: 'realesr-animevideov3.onnx' },
      quantizedConvs: 16,
      calibration: { kind: 'folder', crops: 8 },
    });
    expect(existsSync(manifest.path)).toBe(true);
    expect(manifest.psnrYVsFp32).toBeGreaterThan(30);

    const env = { CRISP_INT8_DIR: int8 };
    const list = await runCli(['models', 'list', '--json'], env);
    const rows = JSON.parse(list.stdout) as Array<{ name: string; int8: { path: string; passed: boolean } | null }>;
    expect(rows.find((m) => m.name === 'digital-art-4x')?.int8).toMatchObject({
      path: manifest.path,
      passed: manifest.passed,
    });
    expect(rows.find((m) => m.name === 'service-lite-4x')?.int8).toBeNull();

    const out = path.join(dir, 'out');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(out);
    const up = await runCli(['upscale', BIRD, '--model', 'digital-art-4x', '--precision', 'int8', '--out', out], {
      ...env,
      CRISP_CPU_INT8: '0',
    });
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr.split('\n').filter((l) => l.startsWith('Crisp:'))).toEqual([
      'Crisp: running realesr-animevideov3 in fp32 instead of int8: this CPU has no int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI, AMX or ARM dot product; checked CRISP_CPU_INT8=0), so int8 would not be faster.',
    ]);
    expect(existsSync(path.join(out, 'bird_LRBI_x4_digital-art-4x_x4.png'))).toBe(true);
  }, 240_000);

  it('models import --int8 installs the model and its int8 variant, calibrated on the bundled set', async () => {
    const int8 = path.join(dir, 'int8-import');
    // XDG_DATA_HOME: the user models directory that `models import` writes and `models list` reads.
    const env = { CRISP_INT8_DIR: int8, XDG_DATA_HOME: path.join(dir, 'data') };
    const r = await runCli(
      ['models', 'import', path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'), '--name', 'anime', '--int8'],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/: imported as anime \(x4, /);
    // Then the import's summary (architecture, parameters, size, licence) and the int8 step's line.
    expect(lines[1]).toMatch(/^ {2}SRVGGNetCompact ×4, .* parameters, .*, licence /);
    expect(lines.find((l) => /^anime: .*int8 \(/.test(l))).toMatch(
      /^anime: .*int8 \(\d+ of \d+ convolutions, \w+ ranges\), [\d.]+ dB PSNR-Y against fp32/,
    );
    expect(r.stderr).toContain('anime: making the int8 variant (the bundled calibration set)');
    const list = await runCli(['models', 'list', '--json'], env);
    expect(list.code, list.stderr).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<{
      name: string;
      int8: { path: string; calibration?: { kind: string; crops: number } } | null;
    }>;
    const anime = rows.find((m) => m.name === 'custom:anime');
    expect(anime?.int8?.path.startsWith(int8)).toBe(true);
    expect(existsSync(anime!.int8!.path)).toBe(true);
  }, 300_000);

  it('models import --int8 --face is refused before anything is written', async () => {
    const models = path.join(dir, 'models-face');
    const r = await runCli([
      'models',
      'import',
      path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'),
      '--face',
      '--int8',
      '--dir',
      models,
    ]);
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual(['crisp: error: --int8 applies to upscaling models, not face models']);
    expect(existsSync(models)).toBe(false);
  });
});
