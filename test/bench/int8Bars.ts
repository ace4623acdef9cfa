/**
 * The int8 bars of issue 42, judged against the real picture and against fp32 on Set5 + Set14 ×4:
 *   ground truth  mean PSNR-Y vs HR within 0.05 dB of fp32's, every image within 0.15 dB; SSIM-Y likewise
 *                 within 0.002 (mean and every image);
 *   no visible    worst image ≥ 36 dB PSNR-Y from fp32, and the 99.9th percentile of the per-pixel absolute
 *   difference    difference (8-bit, any channel) ≤ 8 levels on every image.
 * The speed bar (≥ 1.8× fp32) is measured where the variant is made (int8Build.ts) and by the int8 bench.
 */
import type { HeldoutPair } from './int8Heldout.js';
import { rgbOf } from './int8Heldout.js';
import { psnrY, type RgbImage } from './quality.js';

const BORDER = 4;

/** Y plane (MATLAB rgb2ycbcr, 16–235) of an 8-bit RGB image, without a `BORDER`-pixel frame. */
function lumaOf(img: RgbImage): { y: Float64Array; w: number; h: number } {
  const w = img.width - 2 * BORDER;
  const h = img.height - 2 * BORDER;
  const y = new Float64Array(w * h);
  for (let r = 0; r < h; r++)
    for (let c = 0; c < w; c++) {
      const i = ((r + BORDER) * img.width + c + BORDER) * 3;
      y[r * w + c] = 16 + (65.481 * img.data[i]! + 128.553 * img.data[i + 1]! + 24.966 * img.data[i + 2]!) / 255;
    }
  return { y, w, h };
}

/** 11-tap Gaussian (σ 1.5), normalised: the window of Wang et al.'s SSIM. */
const GAUSS = (() => {
  const g = Array.from({ length: 11 }, (_, i) => Math.exp(-((i - 5) ** 2) / (2 * 1.5 * 1.5)));
  const s = g.reduce((a, b) => a + b, 0);
  return g.map((v) => v / s);
})();

/** Separable 'valid' Gaussian filter. */
function blur(x: Float64Array, w: number, h: number): { v: Float64Array; w: number; h: number } {
  const w1 = w - 10;
  const h1 = h - 10;
  const tmp = new Float64Array(w1 * h);
  for (let r = 0; r < h; r++)
    for (let c = 0; c < w1; c++) {
      let s = 0;
      for (let k = 0; k < 11; k++) s += GAUSS[k]! * x[r * w + c + k]!;
      tmp[r * w1 + c] = s;
    }
  const out = new Float64Array(w1 * h1);
  for (let r = 0; r < h1; r++)
    for (let c = 0; c < w1; c++) {
      let s = 0;
      for (let k = 0; k < 11; k++) s += GAUSS[k]! * tmp[(r + k) * w1 + c]!;
      out[r * w1 + c] = s;
    }
  return { v: out, w: w1, h: h1 };
}

/** SSIM of the Y planes (peak 255, K1 0.01, K2 0.03, Gaussian window), as the SR papers report it. */
export function ssimY(a: RgbImage, b: RgbImage): number {
  const A = lumaOf(a);
  const B = lumaOf(b);
  const { w, h } = A;
  const prod = (p: Float64Array, q: Float64Array) => p.map((v, i) => v * q[i]!);
  const mA = blur(A.y, w, h).v;
  const mB = blur(B.y, w, h).v;
  const sAA = blur(prod(A.y, A.y), w, h).v;
  const sBB = blur(prod(B.y, B.y), w, h).v;
  const sAB = blur(prod(A.y, B.y), w, h).v;
  const c1 = (0.01 * 255) ** 2;
  const c2 = (0.03 * 255) ** 2;
  let sum = 0;
  for (let i = 0; i < mA.length; i++) {
    const ma = mA[i]!;
    const mb = mB[i]!;
    const va = sAA[i]! - ma * ma;
    const vb = sBB[i]! - mb * mb;
    const cov = sAB[i]! - ma * mb;
    sum += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
  }
  return sum / mA.length;
}

/** The 99.9th percentile of |a − b| over every pixel and channel (8-bit levels). */
export function p999AbsDiff(a: RgbImage, b: RgbImage): number {
  const hist = new Float64Array(256);
  for (let i = 0; i < a.data.length; i++) hist[Math.abs(a.data[i]! - b.data[i]!)]!++;
  const target = 0.999 * a.data.length;
  let seen = 0;
  for (let d = 0; d < 256; d++) {
    seen += hist[d]!;
    if (seen >= target) return d;
  }
  return 255;
}

export interface ImageBars {
  name: string;
  hrPsnr: { fp32: number; int8: number };
  hrSsim: { fp32: number; int8: number };
  fromFp32: number;
  p999: number;
}

export interface Bars {
  images: ImageBars[];
  meanPsnr: { fp32: number; int8: number };
  meanSsim: { fp32: number; int8: number };
  worstFromFp32: ImageBars;
  worstP999: number;
  groundTruth: boolean;
  noVisibleDifference: boolean;
}

export function int8Bars(
  pairs: readonly HeldoutPair[],
  fp32: readonly Float32Array[],
  int8: readonly Float32Array[],
): Bars {
  const images = pairs.map((p, k): ImageBars => {
    const w = p.lr.width * 4;
    const h = p.lr.height * 4;
    const f = rgbOf(fp32[k]!, w, h);
    const q = rgbOf(int8[k]!, w, h);
    const d = psnrY(f, q, BORDER);
    return {
      name: p.name,
      hrPsnr: { fp32: psnrY(f, p.hr, BORDER), int8: psnrY(q, p.hr, BORDER) },
      hrSsim: { fp32: ssimY(f, p.hr), int8: ssimY(q, p.hr) },
      fromFp32: Number.isFinite(d) ? d : 99,
      p999: p999AbsDiff(f, q),
    };
  });
  const mean = (g: (x: ImageBars) => number) => images.reduce((a, x) => a + g(x), 0) / images.length;
  const meanPsnr = { fp32: mean((x) => x.hrPsnr.fp32), int8: mean((x) => x.hrPsnr.int8) };
  const meanSsim = { fp32: mean((x) => x.hrSsim.fp32), int8: mean((x) => x.hrSsim.int8) };
  const worstFromFp32 = images.reduce((a, b) => (b.fromFp32 < a.fromFp32 ? b : a));
  const worstP999 = Math.max(...images.map((x) => x.p999));
  const groundTruth =
    meanPsnr.int8 >= meanPsnr.fp32 - 0.05 &&
    meanSsim.int8 >= meanSsim.fp32 - 0.002 &&
    images.every((x) => x.hrPsnr.int8 >= x.hrPsnr.fp32 - 0.15 && x.hrSsim.int8 >= x.hrSsim.fp32 - 0.002);
  return {
    images,
    meanPsnr,
    meanSsim,
    worstFromFp32,
    worstP999,
    groundTruth,
    noVisibleDifference: worstFromFp32.fromFp32 >= 36 && worstP999 <= 8,
  };
}

export function describeBars(b: Bars): string {
  const lines = [
    `ground truth (Set5+Set14 ×4, PSNR-Y / SSIM-Y vs HR): mean fp32 ${b.meanPsnr.fp32.toFixed(2)} / ${b.meanSsim.fp32.toFixed(4)}, ` +
      `int8 ${b.meanPsnr.int8.toFixed(2)} / ${b.meanSsim.int8.toFixed(4)}; worst image Δ ` +
      `${Math.min(...b.images.map((x) => x.hrPsnr.int8 - x.hrPsnr.fp32)).toFixed(2)} dB / ` +
      `${Math.min(...b.images.map((x) => x.hrSsim.int8 - x.hrSsim.fp32)).toFixed(4)} → ${b.groundTruth ? 'PASS' : 'miss'}`,
    `no visible difference: worst ${b.worstFromFp32.fromFp32.toFixed(2)} dB from fp32 (${b.worstFromFp32.name}), ` +
      `99.9th-percentile |Δ| ≤ ${b.worstP999} levels → ${b.noVisibleDifference ? 'PASS' : 'miss'}`,
    ...b.images.map(
      (x) =>
        `  ${x.name}: HR ${x.hrPsnr.fp32.toFixed(2)}→${x.hrPsnr.int8.toFixed(2)} dB, SSIM ${x.hrSsim.fp32.toFixed(4)}→` +
        `${x.hrSsim.int8.toFixed(4)}, from fp32 ${x.fromFp32.toFixed(2)} dB, p99.9 ${x.p999}`,
    ),
  ];
  return lines.join('\n');
}
