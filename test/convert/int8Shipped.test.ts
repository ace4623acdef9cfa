/**
 * The int8 variant shipped beside the bundled digital-art-4x model (resources/models, made by
 * test/bench/shippedInt8.ts): it belongs to the bundled fp32 file, and its worst image on the held-out set
 * (Set5 + Set14 ×4 LR, none of them in the calibration set) stays ≥ 40 dB PSNR-Y from fp32 — the bar
 * `--precision auto` decides on. Inference only (no quantizing), one thread: about 10 s on 2 cores.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findInt8Variant, INT8_QUALITY_BAR_DB, type Int8Variant } from '../../engine/core/inference/index.js';
import { openRawModel } from '../../engine/core/inference/rawModel.js';
import { bundledModelsDir } from '../../engine/core/models/catalog.js';
import { psnrY } from '../bench/quality.js';
import { outputsOf, rgbOf, scoreOutputs, set14Pairs, set5Pairs, type HeldoutPair } from '../bench/int8Heldout.js';

const FP32 = path.join(bundledModelsDir({}), 'realesr-animevideov3.onnx');
let variant: Int8Variant | undefined;
let pairs: HeldoutPair[];
let fp32Out: Float32Array[];
let int8Out: Float32Array[];

beforeAll(async () => {
  variant = await findInt8Variant(FP32, []);
  if (!variant) return;
  pairs = [...(await set5Pairs()), ...(await set14Pairs())];
  const f = await openRawModel(new Uint8Array(readFileSync(FP32)), { threads: 1 });
  const q = await openRawModel(new Uint8Array(readFileSync(variant.path)), { threads: 1 });
  try {
    fp32Out = await outputsOf(f, pairs);
    int8Out = await outputsOf(q, pairs);
  } finally {
    await f.release();
    await q.release();
  }
}, 120_000);

afterAll(() => undefined);

describe('shipped int8 variant (digital-art-4x, realesr-animevideov3)', () => {
  it('sits beside the bundled fp32 file and was made from it, passing both bars when it was made', () => {
    expect(variant?.path).toBe(path.join(bundledModelsDir({}), 'realesr-animevideov3.int8.onnx'));
    expect(variant!.manifest).toMatchObject({
      passed: true,
      calibration: { kind: 'bundled' },
      heldout: { set: 'Set5 + Set14 ×4', images: 19 },
    });
    expect(variant!.manifest.speed?.fp32OverInt8).toBeGreaterThanOrEqual(1.8);
  });

  it('worst Set5 + Set14 image ≥ 40 dB PSNR-Y from fp32, as its manifest records, and nothing lost against HR', () => {
    const s = scoreOutputs(pairs, fp32Out, int8Out);
    const report = s.perImage.map((x) => `${x.name} ${x.psnrY.toFixed(2)}`).join(', ');
    expect(s.worst, report).toBeGreaterThanOrEqual(INT8_QUALITY_BAR_DB);
    // Deterministic graph and inputs: the figure recorded when the variant was made is what it still gives.
    expect(Math.abs(s.worst - variant!.manifest.heldout!.worstPsnrY), report).toBeLessThan(0.05);
    // Against the ground truth, per set: int8 within 0.1 dB of fp32 (mean PSNR-Y).
    for (const set of [pairs.slice(0, 5), pairs.slice(5)]) {
      const drop =
        set.reduce((acc, p) => {
          const k = pairs.indexOf(p);
          const [w, h] = [p.lr.width * 4, p.lr.height * 4];
          return acc + psnrY(rgbOf(fp32Out[k]!, w, h), p.hr) - psnrY(rgbOf(int8Out[k]!, w, h), p.hr);
        }, 0) / set.length;
      expect(drop, set.map((p) => p.name).join(',')).toBeLessThanOrEqual(0.1);
    }
  });
});
