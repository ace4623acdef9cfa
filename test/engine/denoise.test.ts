/**
 * Denoise strength (extension) for service-lite-4x: the engine runs a weight blend of
 * realesr-general-x4v3 (strength 1) and realesr-general-wdn-x4v3 (strength 0), cached per value.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import type { Engine } from '../../engine/service/engine.js';
import { contractRefusal, makeEngine, removeDir, tempDir, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png'); // 72×72
const base = { model: 'service-lite-4x', scale: 4, saveImageAs: 'png', enhanceFace: false };

async function pixels(file: string): Promise<Buffer> {
  return sharp(file).removeAlpha().raw().toBuffer();
}

function psnr(a: Buffer, b: Buffer): number {
  let se = 0;
  for (let i = 0; i < a.length; i++) se += ((a[i] ?? 0) - (b[i] ?? 0)) ** 2;
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255 * a.length) / se);
}

describe('denoise strength through the engine', () => {
  let engine: Engine;
  const outputs = new Map<string, Buffer>();

  async function run(fields: Record<string, unknown>) {
    const r = await engine.startTask(LOCAL_CALLER, {
      fields,
      file: [{ originalFileName: 'bird_LRBI_x4.png', data: { path: BIRD } }],
    });
    const s = await waitForTask(engine, r.taskId);
    expect(s.error).toBeUndefined();
    expect(s.status).toBe('PROCESSED');
    const f = s.files[0]!;
    return {
      status: s,
      file: f,
      pixels: await pixels((await engine.openOutput(LOCAL_CALLER, r.taskId, f.fileName)).path),
    };
  }

  beforeAll(async () => {
    engine = await makeEngine();
  });
  afterAll(async () => {
    await engine.close();
    await removeDir(engine.dataDir);
  });

  it('0.5 runs end to end, differs from 0 and 1 and lies between them', async () => {
    for (const d of [0, 0.5, 1]) {
      const r = await run({ ...base, denoise: String(d) });
      expect(r.status.denoise).toBe(d);
      expect(r.status.model).toBe('service-lite-4x');
      // Strength 1 is the plain model, so it is named like no denoise at all (engine/service/tasks/outputNames.ts).
      expect(r.file.fileName).toBe(
        d === 1 ? 'bird_LRBI_x4_service-lite-4x_x4.png' : `bird_LRBI_x4_service-lite-4x-dn${d}_x4.png`,
      );
      expect(r.file.dimensions).toEqual({ width: 288, height: 288 });
      outputs.set(String(d), r.pixels);
    }
    const [p0, p5, p1] = [outputs.get('0')!, outputs.get('0.5')!, outputs.get('1')!];
    expect(p5.equals(p0)).toBe(false);
    expect(p5.equals(p1)).toBe(false);
    // Between the two: the blend is closer to each end than the two ends are to each other.
    const ends = psnr(p0, p1);
    expect(psnr(p5, p0)).toBeGreaterThan(ends);
    expect(psnr(p5, p1)).toBeGreaterThan(ends);
    // Strength 1 is the plain general model (no blend built); 0 and 0.5 are cached once each.
    expect((await readdir(path.join(engine.dataDir, 'models-cache'))).sort()).toEqual([
      'realesr-general-x4v3-dn0.0000.onnx',
      'realesr-general-x4v3-dn0.5000.onnx',
    ]);
  });

  it('strength 1 gives exactly the plain service-lite-4x output', async () => {
    const plain = await run(base);
    expect(plain.status.denoise).toBeUndefined();
    // Its own strength-1 run: the test does not depend on the one above having run first.
    const one = outputs.get('1') ?? (await run({ ...base, denoise: '1' })).pixels;
    expect(plain.pixels.equals(one)).toBe(true);
  });

  it.each([
    [
      { ...base, model: 'digital-art-4x', denoise: 0.5 },
      "Bad Request: denoise is only available with model 'service-lite-4x' (the general photo model), not 'digital-art-4x'",
    ],
    [{ ...base, denoise: 1.5 }, 'Bad Request: denoise 1.5 is not a number from 0 to 1'],
    [{ ...base, denoise: 'lots' }, "Bad Request: denoise 'lots' is not a number from 0 to 1"],
  ])('refuses %j with 400', async (fields, message) => {
    const e = await contractRefusal(
      engine.startTask(LOCAL_CALLER, { fields, file: [{ originalFileName: 'b.png', data: { path: BIRD } }] }),
    );
    expect([e.status, e.message]).toEqual([400, message]);
  });
});

describe('crisp upscale --denoise', () => {
  let out: string;
  beforeAll(async () => {
    out = await tempDir();
  });
  afterAll(async () => removeDir(out));

  it('picks service-lite-4x and applies the strength', async () => {
    const r = await runCli(['upscale', BIRD, '--denoise', '0.25', '--scale', '1', '--out', out, '--json']);
    expect(crispLines(r.stderr)).toEqual([]);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout) as {
      model: string;
      results: Array<{ status: string; output: string; width: number; height: number }>;
    };
    expect(s.model).toBe('service-lite-4x');
    expect(s.results).toHaveLength(1);
    expect(s.results[0]).toMatchObject({ status: 'done', width: 72, height: 72 });
    // The strength is in the name, so two strengths never overwrite each other.
    expect(path.basename(s.results[0]!.output)).toBe('bird_LRBI_x4_service-lite-4x-dn0.25_x1.png');
    expect(await readdir(out)).toContain('bird_LRBI_x4_service-lite-4x-dn0.25_x1.png');
  });

  it('refuses --denoise with another model in one line', async () => {
    const r = await runCli(['upscale', BIRD, '--denoise', '0.5', '--model', 'digital-art-4x', '--out', out]);
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual([
      'crisp: error: --denoise only works with --model service-lite-4x (the general photo model), not digital-art-4x.',
    ]);
  });
});
