import { readFile, rm, mkdtemp, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blendOnnxWeights, denoiseModel } from '../../engine/core/models/denoiseBlend.js';
import { readOnnx, tensorFloats } from '../../engine/core/onnx/onnxReader.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { maxAbsDiff, runOnnx } from './support/onnxRun.js';

const GENERAL = path.join(ONNX_DIR, 'realesr-general-x4v3.onnx');
const WDN = path.join(ONNX_DIR, 'realesr-general-wdn-x4v3.onnx');
let a: Uint8Array;
let b: Uint8Array;
let cacheDir: string;

beforeAll(async () => {
  [a, b] = [new Uint8Array(await readFile(GENERAL)), new Uint8Array(await readFile(WDN))];
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-dn-'));
});
afterAll(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

function initializerBytes(model: Uint8Array): Map<string, Buffer> {
  return new Map(readOnnx(model).initializers.map((t) => [t.name, Buffer.from(t.data)]));
}

describe('denoise strength by weight interpolation (Real-ESRGAN dni)', () => {
  it('strength 1 is realesr-general-x4v3 and strength 0 is realesr-general-wdn-x4v3, byte for byte', async () => {
    const one = blendOnnxWeights(a, b, 1);
    expect(Buffer.from(one).equals(Buffer.from(a))).toBe(true);
    const zero = blendOnnxWeights(a, b, 0);
    const zi = initializerBytes(zero);
    const bi = initializerBytes(b);
    expect([...zi.keys()]).toEqual([...bi.keys()]);
    for (const [name, bytes] of bi) expect(zi.get(name)!.equals(bytes), name).toBe(true);
    const x = new Float32Array(3 * 16 * 16).map((_, i) => ((i * 31) % 97) / 97);
    const [ours, ref] = await Promise.all([runOnnx(zero, x, [1, 3, 16, 16]), runOnnx(b, x, [1, 3, 16, 16])]);
    expect(maxAbsDiff(ours.data, ref.data)).toBe(0);
  });

  it('strength 0.5 is the weight average', () => {
    const half = readOnnx(blendOnnxWeights(a, b, 0.5));
    const ma = new Map(readOnnx(a).initializers.map((t) => [t.name, t]));
    const mb = new Map(readOnnx(b).initializers.map((t) => [t.name, t]));
    let checked = 0;
    for (const t of half.initializers) {
      const h = tensorFloats(t);
      const wa = tensorFloats(ma.get(t.name)!);
      const wb = tensorFloats(mb.get(t.name)!);
      let mismatches = 0;
      for (let i = 0; i < h.length; i++) if (h[i] !== Math.fround((wa[i]! + wb[i]!) / 2)) mismatches++;
      expect(mismatches, t.name).toBe(0);
      checked += h.length;
    }
    expect(checked).toBeGreaterThan(1_000_000);
    expect(half.nodes.length).toBe(readOnnx(a).nodes.length);
  });

  it('caches one file per strength and refuses out-of-range values', async () => {
    const opts = { generalPath: GENERAL, wdnPath: WDN, cacheDir };
    const p1 = await denoiseModel(0.3, opts);
    const m1 = (await stat(p1)).mtimeMs;
    const p2 = await denoiseModel(0.3, opts);
    expect(p2).toBe(p1);
    expect((await stat(p2)).mtimeMs).toBe(m1);
    const p3 = await denoiseModel(0.7, opts);
    expect(p3).not.toBe(p1);
    const x = new Float32Array(3 * 16 * 16).fill(0.5);
    const out = await runOnnx(p1, x, [1, 3, 16, 16]);
    expect(out.dims).toEqual([1, 3, 64, 64]);
    await expect(denoiseModel(1.5, opts)).rejects.toThrow(/between 0 and 1/);
  });
});
