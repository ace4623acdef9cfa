/**
 * An independent forward pass for RRDBNet in plain TypeScript (no ONNX), straight from BasicSR's
 * PyTorch code, plus a random-weight generator for both key layouts.
 */
import type { TestStateDict, TestTensor } from './torchWriters.js';

export interface Image {
  c: number;
  h: number;
  w: number;
  data: Float32Array;
}

export function conv2d(x: Image, weight: TestTensor, bias: TestTensor | undefined): Image {
  const [oc, ic, kh, kw] = weight.shape as [number, number, number, number];
  if (ic !== x.c) throw new Error(`conv expects ${ic} channels, got ${x.c}`);
  const ph = (kh - 1) / 2;
  const pw = (kw - 1) / 2;
  const out = new Float32Array(oc * x.h * x.w);
  for (let o = 0; o < oc; o++) {
    for (let y = 0; y < x.h; y++) {
      for (let xx = 0; xx < x.w; xx++) {
        let s = bias ? bias.data[o]! : 0;
        for (let i = 0; i < ic; i++) {
          for (let dy = 0; dy < kh; dy++) {
            const sy = y + dy - ph;
            if (sy < 0 || sy >= x.h) continue;
            for (let dx = 0; dx < kw; dx++) {
              const sx = xx + dx - pw;
              if (sx < 0 || sx >= x.w) continue;
              s += weight.data[((o * ic + i) * kh + dy) * kw + dx]! * x.data[(i * x.h + sy) * x.w + sx]!;
            }
          }
        }
        out[(o * x.h + y) * x.w + xx] = s;
      }
    }
  }
  return { c: oc, h: x.h, w: x.w, data: out };
}

export const lrelu = (x: Image, slope = 0.2): Image => ({ ...x, data: x.data.map((v) => (v >= 0 ? v : v * slope)) });
export const add = (a: Image, b: Image, scaleA = 1): Image => ({
  ...a,
  data: a.data.map((v, i) => v * scaleA + b.data[i]!),
});
export const concat = (xs: Image[]): Image => {
  const data = new Float32Array(xs.reduce((n, x) => n + x.data.length, 0));
  let o = 0;
  for (const x of xs) {
    data.set(x.data, o);
    o += x.data.length;
  }
  return { c: xs.reduce((n, x) => n + x.c, 0), h: xs[0]!.h, w: xs[0]!.w, data };
};

export function upsampleNearest2(x: Image): Image {
  const h = x.h * 2;
  const w = x.w * 2;
  const data = new Float32Array(x.c * h * w);
  for (let c = 0; c < x.c; c++)
    for (let y = 0; y < h; y++)
      for (let xx = 0; xx < w; xx++) data[(c * h + y) * w + xx] = x.data[(c * x.h + (y >> 1)) * x.w + (xx >> 1)]!;
  return { c: x.c, h, w, data };
}

/** torch.nn.functional.pixel_unshuffle: out channel c·r² + i·r + j takes pixel (y·r+i, x·r+j). */
export function pixelUnshuffle(x: Image, r: number): Image {
  const h = x.h / r;
  const w = x.w / r;
  const c = x.c * r * r;
  const data = new Float32Array(c * h * w);
  for (let ch = 0; ch < x.c; ch++)
    for (let i = 0; i < r; i++)
      for (let j = 0; j < r; j++)
        for (let y = 0; y < h; y++)
          for (let xx = 0; xx < w; xx++)
            data[((ch * r * r + i * r + j) * h + y) * w + xx] = x.data[(ch * x.h + y * r + i) * x.w + xx * r + j]!;
  return { c, h, w, data };
}

/** BasicSR RRDBNet.forward on BasicSR-named weights. */
export function rrdbForward(
  d: TestStateDict,
  x: Image,
  cfg: { scale: number; numBlocks: number; numUpsample: number; unshuffle: number },
): Image {
  const g = (k: string): TestTensor => {
    const t = d.get(k);
    if (!t) throw new Error(`missing ${k}`);
    return t;
  };
  const conv = (v: Image, name: string): Image => conv2d(v, g(`${name}.weight`), d.get(`${name}.bias`));
  let feat = cfg.unshuffle > 1 ? pixelUnshuffle(x, cfg.unshuffle) : x;
  feat = conv(feat, 'conv_first');
  let body = feat;
  for (let b = 0; b < cfg.numBlocks; b++) {
    const blockIn = body;
    for (let r = 1; r <= 3; r++) {
      const rdbIn = body;
      const x1 = lrelu(conv(rdbIn, `body.${b}.rdb${r}.conv1`));
      const x2 = lrelu(conv(concat([rdbIn, x1]), `body.${b}.rdb${r}.conv2`));
      const x3 = lrelu(conv(concat([rdbIn, x1, x2]), `body.${b}.rdb${r}.conv3`));
      const x4 = lrelu(conv(concat([rdbIn, x1, x2, x3]), `body.${b}.rdb${r}.conv4`));
      const x5 = conv(concat([rdbIn, x1, x2, x3, x4]), `body.${b}.rdb${r}.conv5`);
      body = add(x5, rdbIn, 0.2);
    }
    body = add(body, blockIn, 0.2);
  }
  feat = add(conv(body, 'conv_body'), feat);
  for (let u = 1; u <= cfg.numUpsample; u++) feat = lrelu(conv(upsampleNearest2(feat), `conv_up${u}`));
  return conv(lrelu(conv(feat, 'conv_hr')), 'conv_last');
}

/** Deterministic PRNG so a failing case can be reproduced. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export interface RrdbCase {
  layout: 'esrgan' | 'basicsr';
  numBlocks: number;
  scale: 1 | 2 | 4 | 8;
  numFeat: number;
  numGrowCh: number;
}

/**
 * Random RRDBNet weights (BasicSR's default_init_weights scale 0.1 keeps 23 blocks numerically tame).
 * Returns the dict in the requested layout and the same tensors under BasicSR names for the reference.
 */
export function randomRrdb(
  c: RrdbCase,
  seed = 1,
): { dict: TestStateDict; basicsr: TestStateDict; unshuffle: number; numUpsample: number } {
  const rand = rng(seed);
  const basicsr: TestStateDict = new Map();
  const convT = (name: string, o: number, i: number): void => {
    const std = 0.1 * Math.sqrt(2 / (i * 9));
    basicsr.set(`${name}.weight`, {
      shape: [o, i, 3, 3],
      data: Float32Array.from({ length: o * i * 9 }, () => (rand() * 2 - 1) * std * 1.7),
    });
    basicsr.set(`${name}.bias`, { shape: [o], data: Float32Array.from({ length: o }, () => (rand() * 2 - 1) * 0.05) });
  };
  // The original ESRGAN layout has no pixel-unshuffle: its x2 has one upsampling, x4 two.
  const unshuffle = c.layout === 'basicsr' ? (c.scale === 2 ? 2 : c.scale === 1 ? 4 : 1) : 1;
  const numUpsample = c.layout === 'basicsr' ? 2 : Math.log2(c.scale);
  const nf = c.numFeat;
  const gc = c.numGrowCh;
  convT('conv_first', nf, 3 * unshuffle * unshuffle);
  for (let b = 0; b < c.numBlocks; b++)
    for (let r = 1; r <= 3; r++)
      for (let j = 1; j <= 5; j++) convT(`body.${b}.rdb${r}.conv${j}`, j === 5 ? nf : gc, nf + (j - 1) * gc);
  convT('conv_body', nf, nf);
  for (let u = 1; u <= numUpsample; u++) convT(`conv_up${u}`, nf, nf);
  convT('conv_hr', nf, nf);
  convT('conv_last', 3, nf);
  if (c.layout === 'basicsr') return { dict: basicsr, basicsr, unshuffle, numUpsample };
  const dict: TestStateDict = new Map();
  const map = (from: string, to: string): void => {
    for (const s of ['weight', 'bias']) dict.set(`${to}.${s}`, basicsr.get(`${from}.${s}`)!);
  };
  map('conv_first', 'model.0');
  for (let b = 0; b < c.numBlocks; b++)
    for (let r = 1; r <= 3; r++)
      for (let j = 1; j <= 5; j++) map(`body.${b}.rdb${r}.conv${j}`, `model.1.sub.${b}.RDB${r}.conv${j}.0`);
  map('conv_body', `model.1.sub.${c.numBlocks}`);
  for (let u = 1; u <= numUpsample; u++) map(`conv_up${u}`, `model.${3 * u}`);
  map('conv_hr', `model.${3 * numUpsample + 2}`);
  map('conv_last', `model.${3 * numUpsample + 4}`);
  return { dict, basicsr, unshuffle, numUpsample };
}

/** A 1× SRVGGNetCompact close to the identity (output = input + a small learned residual), as a restorer is. */
export function nearIdentity(): TestStateDict {
  const rand = rng(5);
  const conv = (o: number, i: number) => ({
    shape: [o, i, 3, 3],
    data: Float32Array.from({ length: o * i * 9 }, () => (rand() - 0.5) * 0.2),
  });
  const vec = (n: number, v: number) => ({ shape: [n], data: new Float32Array(n).fill(v) });
  return new Map([
    ['body.0.weight', conv(8, 3)],
    ['body.0.bias', vec(8, 0.01)],
    ['body.1.weight', vec(8, 0.25)],
    ['body.2.weight', conv(8, 8)],
    ['body.2.bias', vec(8, 0)],
    ['body.3.weight', vec(8, 0.25)],
    ['body.4.weight', conv(3, 8)],
    ['body.4.bias', vec(3, -0.02)],
  ]);
}
