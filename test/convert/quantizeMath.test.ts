import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ActivationStats, quantizationMse } from '../../engine/convert/int8/calibrate.js';
import { ConvHessian, gptqQuantize } from '../../engine/convert/int8/gptq.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import {
  activationParams,
  planQuantization,
  quantizeModel,
  quantizeWeights,
} from '../../engine/convert/int8/quantize.js';
import { bundledModelsDir } from '../../engine/core/models/catalog.js';

/** Deterministic pseudo-random numbers (xorshift), so every run sees the same data. */
function rng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

describe('int8 arithmetic', () => {
  it('per-channel symmetric weights: each channel’s largest magnitude maps to ±127, an all-zero channel stays zero', () => {
    const w = Float32Array.from([0.5, -1, 0.25, 0, 0, 0, 4, 2, -3]);
    const { q, scales } = quantizeWeights(w, 3);
    expect([...q]).toEqual([64, -127, 32, 0, 0, 0, 127, 64, -95]);
    expect(scales[0]).toBeCloseTo(1 / 127, 9);
    expect(scales[1]).toBe(1);
    expect(scales[2]).toBeCloseTo(4 / 127, 9);
  });

  it('activation ranges always contain zero exactly (zero padding must stay zero)', () => {
    expect(activationParams({ min: 2, max: 10 })).toEqual({ scale: 10 / 255, zeroPoint: 0 });
    const p = activationParams({ min: -5.1, max: 20.4 });
    expect(p.zeroPoint).toBe(51);
    expect(p.scale * p.zeroPoint).toBeCloseTo(5.1, 6);
  });

  it('MSE ranges clip the heavy tail of SR activations and quantize them with less error than min/max', () => {
    const r = rng(7);
    // A Laplace bulk and a rare wider Laplace tail, as PReLU SR activations look (median ≈ 0, max ≈ 10× p99).
    const draw = (): number => {
      const u = r() - 0.5;
      const v = -Math.sign(u) * Math.log(1 - 2 * Math.abs(u));
      return r() < 0.002 ? 10 * v : v;
    };
    const stats = new ActivationStats();
    for (let k = 0; k < 4; k++) {
      const x = new Float32Array(20000).map(draw);
      stats.add('t', x);
      stats.next();
    }
    const minmax = stats.ranges('minmax').get('t')!;
    const mse = stats.ranges('mse').get('t')!;
    expect(mse.max).toBeLessThan(0.8 * minmax.max);
    // Judged on fresh data from the same distribution, not on the sample the range was chosen on.
    const fresh = new Float32Array(50000).map(draw).sort();
    expect(quantizationMse(fresh, mse)).toBeLessThan(quantizationMse(fresh, minmax) / 1.05);
  });

  it('GPTQ rounding gives a smaller layer-output error than nearest rounding on correlated inputs', () => {
    const r = rng(11);
    const C = 4;
    const H = 12;
    const W = 12;
    // Smooth, correlated input channels (like image features) so the Hessian is far from diagonal.
    const x = new Float32Array(C * H * W);
    for (let c = 0; c < C; c++)
      for (let y = 0; y < H; y++)
        for (let xx = 0; xx < W; xx++)
          x[c * H * W + y * W + xx] = Math.sin(0.4 * xx + c) + Math.cos(0.3 * y - c) + 0.1 * r();
    const O = 3;
    const D = C * 9;
    // Heavy-tailed kernels: one large tap per output channel, as these SR models have.
    const w = new Float32Array(O * D).map((_, i) => (i % D === 4 ? 2 : 0.05 * (r() - 0.5)));
    const hess = new ConvHessian(C, 3, 3, [1, 1]);
    hess.add(x, H, W, 400);
    const { q: nearest, scales } = quantizeWeights(w, O);
    const gptq = gptqQuantize(w, O, scales, hess);
    expect([...gptq]).not.toEqual([...nearest]);
    // Output error of each rounding: Σ_patches (ΔW · v)², with v the im2col patches of the input.
    const outputError = (q: Int8Array): number => {
      let se = 0;
      for (let py = 1; py < H - 1; py++) {
        for (let px = 1; px < W - 1; px++) {
          for (let o = 0; o < O; o++) {
            let d = 0;
            for (let c = 0; c < C; c++) {
              for (let k = 0; k < 9; k++) {
                const i = o * D + c * 9 + k;
                d +=
                  (q[i]! * scales[o]! - w[i]!) * x[c * H * W + (py + Math.floor(k / 3) - 1) * W + (px + (k % 3) - 1)]!;
              }
            }
            se += d * d;
          }
        }
      }
      return se;
    };
    expect(outputError(gptq)).toBeLessThan(outputError(nearest) * 0.8);
  });

  it('given activation scales and zero points (quantization-aware fine-tuning) go into the graph unchanged', () => {
    const model = new Uint8Array(readFileSync(path.join(bundledModelsDir({}), 'realesr-animevideov3.onnx')));
    const { tensors } = planQuantization(readOnnx(model));
    const given = new Map(
      tensors.map((t, k) => [t, { scale: Math.fround(0.013 + k / 977), zeroPoint: (k * 37) % 256 }]),
    );
    const info = readOnnx(quantizeModel(model, new Map(), { activationParams: given }));
    const inits = new Map(info.initializers.map((t) => [t.name, t]));
    for (const [t, p] of given) {
      const s = inits.get(`${t}_scale`)!.data;
      expect(new DataView(s.buffer, s.byteOffset, 4).getFloat32(0, true)).toBe(p.scale);
      expect(inits.get(`${t}_zero_point`)!.data[0]).toBe(p.zeroPoint);
    }
  });
});
