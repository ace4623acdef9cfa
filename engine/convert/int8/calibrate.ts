/**
 * Activation ranges for int8 quantization, from the activations a model produces on calibration images.
 *
 * SR networks with PReLU have heavy-tailed activations (median near 0, a few values 10× the 99th
 * percentile), so the plain min/max range wastes most of the 256 levels on outliers. `mse` picks, per
 * tensor, the clipping range that minimises quantize-dequantize error over the sampled values (outliers
 * clipped vs. everything rounded coarsely); `percentile` clips at fixed percentiles. The bench compares them.
 */
import { activationParams, type ActivationRange } from './quantize.js';

export const RANGE_METHODS = ['minmax', 'percentile', 'mse'] as const;
export type RangeMethod = (typeof RANGE_METHODS)[number];

/** Values kept per tensor per observation; a strided sample is enough for percentiles and the MSE search. */
const SAMPLE_PER_OBSERVATION = 16_384;
/** Percentile pairs (low tail, high tail) tried by the MSE search, plus the exact min/max. */
const MSE_CANDIDATES = [90, 99, 99.9, 99.95, 99.99, 99.995, 99.999, 99.9999];

interface TensorStats {
  min: number;
  max: number;
  samples: number[];
}

/** Accumulates activation statistics over calibration runs; ranges() turns them into quantization ranges. */
export class ActivationStats {
  private readonly tensors = new Map<string, TensorStats>();
  observations = 0;

  add(name: string, data: Float32Array): void {
    let s = this.tensors.get(name);
    if (!s) {
      s = { min: Infinity, max: -Infinity, samples: [] };
      this.tensors.set(name, s);
    }
    const stride = Math.max(1, Math.floor(data.length / SAMPLE_PER_OBSERVATION));
    // An odd offset per observation avoids sampling the same pixel column of every tile.
    for (let i = (this.observations * 7) % stride; i < data.length; i += stride) s.samples.push(data[i]!);
    for (let i = 0; i < data.length; i++) {
      const v = data[i]!;
      if (v < s.min) s.min = v;
      if (v > s.max) s.max = v;
    }
  }

  /** Marks the end of one calibration image (all of its tensors added). */
  next(): void {
    this.observations++;
  }

  names(): string[] {
    return [...this.tensors.keys()];
  }

  ranges(method: RangeMethod, percentile = 99.999): Map<string, ActivationRange> {
    const out = new Map<string, ActivationRange>();
    for (const [name, s] of this.tensors) {
      if (method === 'minmax' || s.samples.length === 0) {
        out.set(name, { min: s.min, max: s.max });
        continue;
      }
      const sorted = Float32Array.from(s.samples).sort();
      if (method === 'percentile') out.set(name, percentileRange(sorted, percentile));
      else out.set(name, mseRange(sorted, s));
    }
    return out;
  }
}

function quantile(sorted: Float32Array, p: number): number {
  const i = Math.round((p / 100) * (sorted.length - 1));
  return sorted[Math.min(sorted.length - 1, Math.max(0, i))]!;
}

function percentileRange(sorted: Float32Array, p: number): ActivationRange {
  return { min: quantile(sorted, 100 - p), max: quantile(sorted, p) };
}

/** Mean squared quantize-dequantize error of the sample under a range (clipping included). */
export function quantizationMse(sorted: Float32Array, r: ActivationRange): number {
  const { scale, zeroPoint } = activationParams(r);
  let se = 0;
  for (let i = 0; i < sorted.length; i++) {
    const v = sorted[i]!;
    const q = Math.min(255, Math.max(0, Math.round(v / scale) + zeroPoint));
    const d = (q - zeroPoint) * scale - v;
    se += d * d;
  }
  return se / sorted.length;
}

function mseRange(sorted: Float32Array, s: TensorStats): ActivationRange {
  // The low and high tails are searched independently: PReLU outputs are far from symmetric.
  const lows = [s.min, ...MSE_CANDIDATES.map((p) => quantile(sorted, 100 - p))];
  const highs = [s.max, ...MSE_CANDIDATES.map((p) => quantile(sorted, p))];
  let best: ActivationRange = { min: s.min, max: s.max };
  let bestErr = quantizationMse(sorted, best);
  for (const min of lows) {
    for (const max of highs) {
      const r = { min, max };
      const e = quantizationMse(sorted, r);
      if (e < bestErr) {
        bestErr = e;
        best = r;
      }
    }
  }
  return best;
}
