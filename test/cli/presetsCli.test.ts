/**
 * `crisp FILE…` (no command) upscales with the default preset; `--preset NAME` on upscale and batch, with flags
 * overriding it; `crisp presets export/import/default` round-trip and a tampered file refused in a sentence; every
 * built-in preset runs with only the bundled models (a fresh offline install).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png'); // 72×72

describe('presets on the command line', () => {
  let dir: string;
  /** Each test's own presets file, so none sees another's imports or default (any order: --sequence.shuffle). */
  const presetsEnv = (name: string): Record<string, string> => ({ CRISP_PRESETS_FILE: path.join(dir, `${name}.json`) });
  beforeAll(async () => {
    dir = await tempDir('crisp-presets-cli-');
  });
  afterAll(async () => removeDir(dir));

  it('crisp FILE upscales with the default preset, and a chosen default takes over', async () => {
    const env = presetsEnv('default-presets');
    const out = path.join(dir, 'default');
    // Photos (built-in default): service-lite-4x ×4 JPEG. --out is a flag over the preset.
    const r = await runCli([BIRD, '--out', out], env);
    expect(r.code, r.stderr).toBe(0);
    const first = path.join(out, 'bird_LRBI_x4_service-lite-4x_x4.jpg');
    expect(r.stdout.trim()).toBe(`${BIRD} → ${first} (288×288, ${r.stdout.match(/, ([\d.]+ KB)\)/)?.[1]})`);
    const meta = await sharp(first).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 288, 288]);

    const d = await runCli(['presets', 'default', 'print ×2 LOSSLESS'], env);
    expect(d.stdout).toBe('Default preset: "Print ×2 lossless"\n');
    const r2 = await runCli([BIRD, '-o', out], env);
    expect(r2.code, r2.stderr).toBe(0);
    const m2 = await sharp(path.join(out, 'bird_LRBI_x4_service-lite-4x_x2.png')).metadata();
    expect([m2.format, m2.width, m2.height]).toEqual(['png', 144, 144]);
  });

  it('--preset on upscale and batch; a flag given wins over the preset; an unknown name is refused', async () => {
    const env = presetsEnv('named-presets');
    const out = path.join(dir, 'named');
    const up = await runCli(['upscale', BIRD, '--preset', 'Illustrations', '--scale', '2', '-o', out], env);
    expect(up.code, up.stderr).toBe(0);
    const m = await sharp(path.join(out, 'bird_LRBI_x4_digital-art-4x_x2.png')).metadata();
    expect([m.format, m.width]).toEqual(['png', 144]);

    const imgs = path.join(dir, 'imgs');
    await runCli(['upscale', BIRD, '-m', 'digital-art-4x', '-s', '1', '-f', 'jpg', '-o', imgs], env);
    const batch = await runCli(
      ['batch', imgs, '--preset', 'print ×2 lossless', '-m', 'digital-art-4x', '-o', out],
      env,
    );
    expect(batch.code, batch.stderr).toBe(0);
    const m3 = await sharp(path.join(out, 'bird_LRBI_x4_digital-art-4x_x1_digital-art-4x_x2.png')).metadata();
    expect([m3.format, m3.width]).toEqual(['png', 144]);

    const bad = await runCli(['upscale', BIRD, '--preset', 'Posters', '-o', out], env);
    expect(bad.code).toBe(1);
    expect(crispLines(bad.stderr)).toEqual([
      'crisp: error: --preset: There is no preset named "Posters". Presets: "Photos", "Illustrations", "Print ×2 lossless".',
    ]);
  });

  it('export → import round trip into another presets file; a tampered file is refused and imports nothing', async () => {
    const env = presetsEnv('round-trip-presets');
    const custom = {
      crispPresets: 1,
      presets: [
        {
          name: 'Tiny webp',
          options: {
            model: 'digital-art-4x',
            scale: 1,
            passes: 1,
            format: 'webp',
            compression: 10,
            denoise: 1,
            face: false,
            faceModel: null,
            faceStrength: 1,
            outputFolder: '',
            template: '{name}-tiny.{ext}',
            metadata: 'strip',
            overwrite: 'replace',
            preModel: null,
          },
        },
      ],
    };
    const src = path.join(dir, 'in.json');
    await writeFile(src, JSON.stringify(custom));
    const imp = await runCli(['presets', 'import', src], env);
    expect(imp.code, imp.stderr).toBe(0);
    expect(imp.stdout).toBe('Imported "Tiny webp"\n');
    const exported = path.join(dir, 'out.json');
    const exp = await runCli(['presets', 'export', exported], env);
    expect(exp.stdout).toBe(`Exported "Tiny webp" to ${exported}\n`);
    // A file from before the exact-size options imports as it is; the export names them (none).
    const [entry] = custom.presets;
    expect(JSON.parse(await readFile(exported, 'utf8'))).toEqual({
      ...custom,
      presets: [{ ...entry, options: { ...entry!.options, width: null, height: null, longSide: null } }],
    });

    const other = { CRISP_PRESETS_FILE: path.join(dir, 'other.json') };
    expect((await runCli(['presets', 'import', exported], other)).code).toBe(0);
    const out = path.join(dir, 'tiny');
    const run = await runCli(['upscale', BIRD, '--preset', 'tiny webp', '-o', out], other);
    expect(run.code, run.stderr).toBe(0);
    expect(await readdir(out)).toEqual(['bird_LRBI_x4-tiny.webp']);

    const tampered = structuredClone(custom);
    (tampered.presets[0]!.options as Record<string, unknown>).scale = 16;
    tampered.presets[0]!.name = 'Tampered';
    await writeFile(src, JSON.stringify(tampered));
    const refused = await runCli(['presets', 'import', src], other);
    expect(refused.code).toBe(1);
    expect(crispLines(refused.stderr)).toEqual([
      'crisp: error: This presets file was refused (presets[0].options.scale: must be an integer from 1 to 8): nothing was imported. Export the presets again from Crisp.',
    ]);
    const list = await runCli(['presets', 'list', '--json'], other);
    expect((JSON.parse(list.stdout) as { presets: { name: string }[] }).presets.map((p) => p.name)).toEqual([
      'Photos',
      'Illustrations',
      'Print ×2 lossless',
      'Tiny webp',
    ]);
  });

  it('every built-in preset upscales on a fresh offline install: no models folder but the bundled models', async () => {
    const env = { ...presetsEnv('fresh'), CRISP_MODELS_DIR: path.join(dir, 'no-models-here') };
    const out = path.join(dir, 'fresh');
    for (const [preset, file, size] of [
      ['Photos', 'bird_LRBI_x4_service-lite-4x_x4.jpg', 288],
      ['Illustrations', 'bird_LRBI_x4_digital-art-4x_x4.png', 288],
      ['Print ×2 lossless', 'bird_LRBI_x4_service-lite-4x_x2.png', 144],
    ] as const) {
      const r = await runCli(['upscale', BIRD, '--preset', preset, '-o', out], env);
      expect(r.code, `${preset}: ${r.stderr}`).toBe(0);
      const m = await sharp(path.join(out, file)).metadata();
      expect([m.width, m.height], preset).toEqual([size, size]);
    }
  });
});
