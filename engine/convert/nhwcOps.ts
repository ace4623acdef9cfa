/**
 * ONNX building blocks for the transformer upscalers converted from state dicts (DAT, SRFormer): token maps
 * are NHWC (`[B, H, W, C]`, so LayerNorm and Linear act on the last axis), convolutions take NCHW, windows are
 * `[B·nWin, N, C]` with N = window height × width, in the raster order torch's window_partition uses.
 *
 * Spatial sizes stay dynamic (a tiled pipeline feeds edge tiles of any size): window counts, padding and
 * the shifted-window masks are computed in the graph from `Shape`, with standard opset-17 operators the
 * onnxruntime CPU provider runs (Shape, Reshape, Transpose, MatMul, Softmax, Slice, Concat, Pad, Range, Where,
 * LayerNormalization, Erf). Initializers keep the state-dict key they come from, so a graph can be traced
 * back to the checkpoint.
 */
import { UnsupportedArchitectureError } from './architecture.js';
import { attr, GraphBuilder } from './onnxWriter.js';
import type { StateDict, Tensor } from './stateDict.js';

/** torch.nn.LayerNorm / BatchNorm2d default epsilon. */
export const NORM_EPS = 1e-5;
/** What the Swin-family masks put between tokens of different regions of a shifted window. */
export const MASK_VALUE = -100;
const INT64_MAX = 2 ** 62;

export class TokenGraph {
  readonly g: GraphBuilder;
  private n = 0;

  constructor(
    name: string,
    private readonly dict: StateDict,
    /** How errors name the expected file, e.g. "an SRFormer checkpoint". */
    private readonly expected: string,
  ) {
    this.g = new GraphBuilder(name);
  }

  /** A checkpoint tensor; a missing one means the file is not the architecture it looked like. */
  t(key: string): Tensor {
    const v = this.dict.get(key);
    if (!v) throw new UnsupportedArchitectureError(`not ${this.expected}: ${key} is missing`);
    return v;
  }

  has(key: string): boolean {
    return this.dict.has(key);
  }

  private uid(base: string): string {
    return `${base}__${this.n++}`;
  }

  node(op: string, inputs: string[], attrs: Parameters<GraphBuilder['node']>[2] = {}, output?: string): string {
    return this.g.node(op, inputs, attrs, output);
  }

  floats(dims: number[], data: Float32Array | number[], name = 'const'): string {
    return this.g.weight(this.uid(name), dims, data instanceof Float32Array ? data : Float32Array.from(data));
  }

  scalar(v: number): string {
    return this.floats([], [v], 'scalar');
  }

  ints(values: number[]): string {
    return this.g.int64s(this.uid('ints'), values);
  }

  /** A checkpoint tensor as an initializer named after its key (optionally reshaped). */
  param(key: string, dims?: number[]): string {
    const v = this.t(key);
    return this.g.weight(key, dims ?? v.shape, v.data);
  }

  add(a: string, b: string): string {
    return this.node('Add', [a, b]);
  }

  mul(a: string, b: string): string {
    return this.node('Mul', [a, b]);
  }

  /** torch.nn.Linear on the last axis: x @ Wᵀ + b. */
  linear(x: string, prefix: string): string {
    const w = this.t(`${prefix}.weight`);
    const [out, inp] = w.shape as [number, number];
    const y = this.node('MatMul', [x, this.g.weight(`${prefix}.weight_t`, [inp, out], transpose2d(w.data, out, inp))]);
    return this.has(`${prefix}.bias`) ? this.add(y, this.param(`${prefix}.bias`)) : y;
  }

  layerNorm(x: string, prefix: string): string {
    return this.node('LayerNormalization', [x, this.param(`${prefix}.weight`), this.param(`${prefix}.bias`)], {
      axis: attr.int(-1),
      epsilon: attr.float(NORM_EPS),
    });
  }

  /** torch's exact GELU: x · ½(1 + erf(x/√2)). */
  gelu(x: string): string {
    const e = this.node('Erf', [this.mul(x, this.scalar(Math.SQRT1_2))]);
    return this.mul(x, this.mul(this.add(e, this.scalar(1)), this.scalar(0.5)));
  }

  leakyRelu(x: string, slope: number): string {
    return this.node('LeakyRelu', [x], { alpha: attr.float(slope) });
  }

  sigmoid(x: string): string {
    return this.node('Sigmoid', [x]);
  }

  toNchw(x: string): string {
    return this.node('Transpose', [x], { perm: attr.ints([0, 3, 1, 2]) });
  }

  toNhwc(x: string): string {
    return this.node('Transpose', [x], { perm: attr.ints([0, 2, 3, 1]) });
  }

  /**
   * A same-padded Conv2d (groups from the weight shape), with an eval-mode BatchNorm2d that follows it folded
   * into the weights: W·γ/√(σ²+ε) and (b − μ)·γ/√(σ²+ε) + β.
   */
  conv(x: string, prefix: string, opts: { bn?: string; group?: number } = {}): string {
    const { weight, bias } = this.convWeights(prefix, opts.bn);
    const k = weight.shape[2]!;
    const p = (k - 1) / 2;
    const name = opts.bn ? `${prefix}.weight_bn` : `${prefix}.weight`;
    return this.g.conv(
      x,
      this.g.weight(name, weight.shape, weight.data),
      this.g.weight(`${name}_bias`, [bias.length], bias),
      [k, weight.shape[3]!],
      [p, p, p, p],
      { group: opts.group ?? 1 },
    );
  }

  /** A 1×1 conv (+ folded BatchNorm) applied to an NHWC map as a MatMul on the channel axis. */
  pointwise(x: string, prefix: string, bn?: string): string {
    const { weight, bias } = this.convWeights(prefix, bn);
    const [out, inp] = weight.shape as [number, number];
    const w = this.g.weight(this.uid(`${prefix}.pointwise`), [inp, out], transpose2d(weight.data, out, inp));
    return this.add(this.node('MatMul', [x, w]), this.floats([out], bias, `${prefix}.pointwise_bias`));
  }

  private convWeights(prefix: string, bn?: string): { weight: Tensor; bias: Float32Array } {
    const w = this.t(`${prefix}.weight`);
    const out = w.shape[0]!;
    const bias = this.has(`${prefix}.bias`) ? Float32Array.from(this.t(`${prefix}.bias`).data) : new Float32Array(out);
    if (!bn) return { weight: w, bias };
    const gamma = this.t(`${bn}.weight`).data;
    const beta = this.t(`${bn}.bias`).data;
    const mean = this.t(`${bn}.running_mean`).data;
    const variance = this.t(`${bn}.running_var`).data;
    const per = w.data.length / out;
    const data = new Float32Array(w.data.length);
    for (let o = 0; o < out; o++) {
      const s = gamma[o]! / Math.sqrt(variance[o]! + NORM_EPS);
      for (let i = 0; i < per; i++) data[o * per + i] = w.data[o * per + i]! * s;
      bias[o] = (bias[o]! - mean[o]!) * s + beta[o]!;
    }
    return { weight: { shape: w.shape, data }, bias };
  }

  /** Dimension `axis` of x as a 1-element int64 tensor. */
  dim(x: string, axis: number): string {
    return this.node('Shape', [x], { start: attr.int(axis), end: attr.int(axis + 1) });
  }

  concatInts(parts: Array<string | number[]>): string {
    return this.node(
      'Concat',
      parts.map((p) => (typeof p === 'string' ? p : this.ints(p))),
      { axis: attr.int(0) },
    );
  }

  slice(x: string, axis: number, start: number, end: number | string): string {
    const e = typeof end === 'string' ? end : this.ints([end]);
    return this.node('Slice', [x, this.ints([start]), e, this.ints([axis])]);
  }

  /** Slices of the last axis at the given widths (torch.split / chunk). */
  split(x: string, axis: number, widths: number[]): string[] {
    let at = 0;
    return widths.map((w) => {
      const s = this.slice(x, axis, at, at + w);
      at += w;
      return s;
    });
  }

  /** (multiple − n mod multiple) mod multiple: the padding that makes n a multiple. */
  padAmount(n: string, multiple: number): string {
    const m = this.ints([multiple]);
    return this.node('Mod', [this.node('Sub', [m, this.node('Mod', [n, m])]), m]);
  }

  /** Pads an NHWC map at the bottom and right up to multiples of `multiple` (zeros, as F.pad does). */
  padNhwc(x: string, multiple: number): string {
    const pads = this.concatInts([
      [0, 0, 0, 0, 0],
      this.padAmount(this.dim(x, 1), multiple),
      this.padAmount(this.dim(x, 2), multiple),
      [0],
    ]);
    return this.node('Pad', [x, pads], { mode: attr.string('constant') });
  }

  /** Pads an NCHW image at the bottom and right to multiples of `multiple`, reflecting (F.pad mode='reflect'). */
  reflectPadNchw(x: string, multiple: number): string {
    const pads = this.concatInts([
      [0, 0, 0, 0, 0, 0],
      this.padAmount(this.dim(x, 2), multiple),
      this.padAmount(this.dim(x, 3), multiple),
    ]);
    return this.node('Pad', [x, pads], { mode: attr.string('reflect') });
  }

  /** x[:, :H, :W] (NHWC) or x[:, :, :H, :W] (NCHW, axes 2 and 3) with H, W taken from 1-element tensors. */
  crop(x: string, h: string, w: string, axes: [number, number]): string {
    return this.node('Slice', [x, this.ints([0, 0]), this.concatInts([h, w]), this.ints(axes)]);
  }

  /** torch.roll(x, shifts=(sh, sw), dims=(1, 2)) with static shifts: out[i] = x[i − shift]. */
  roll(x: string, sh: number, sw: number): string {
    let y = x;
    for (const [axis, s] of [
      [1, sh],
      [2, sw],
    ] as const) {
      if (s === 0) continue;
      // cat(x[−s:], x[:−s]): for s < 0 the first |s| rows move to the end, for s > 0 the last s to the front.
      const head = this.slice(y, axis, -s, INT64_MAX);
      const tail = this.slice(y, axis, 0, -s);
      y = this.node('Concat', [head, tail], { axis: attr.int(axis) });
    }
    return y;
  }

  /** [B, Hp, Wp, C] → [B·nWin, hs·ws, C], windows in raster order (torch window_partition / img2windows). */
  windowPartition(x: string, hs: number, ws: number, c: number): string {
    const shape = this.concatInts([
      this.dim(x, 0),
      this.node('Div', [this.dim(x, 1), this.ints([hs])]),
      [hs],
      this.node('Div', [this.dim(x, 2), this.ints([ws])]),
      [ws, c],
    ]);
    const t = this.node('Transpose', [this.node('Reshape', [x, shape])], { perm: attr.ints([0, 1, 3, 2, 4, 5]) });
    return this.node('Reshape', [t, this.ints([-1, hs * ws, c])]);
  }

  /** The inverse of windowPartition, back to the [B, Hp, Wp, C] layout of `like`. */
  windowReverse(win: string, hs: number, ws: number, c: number, like: string): string {
    const h = this.dim(like, 1);
    const w = this.dim(like, 2);
    const shape = this.concatInts([
      this.dim(like, 0),
      this.node('Div', [h, this.ints([hs])]),
      this.node('Div', [w, this.ints([ws])]),
      [hs, ws, c],
    ]);
    const t = this.node('Transpose', [this.node('Reshape', [win, shape])], { perm: attr.ints([0, 1, 3, 2, 4, 5]) });
    return this.node('Reshape', [t, this.concatInts([this.dim(like, 0), h, w, [c]])]);
  }

  /**
   * The region label of each row (or column) of a shifted, padded map of `n` rows, as in Swin's calculate_mask:
   * slices [0, n−size) → 0, [n−size, n−shift) → 1, [n−shift, n) → 2. `n` is a 1-element int64 tensor.
   */
  private regionLabels(n: string, size: number, shift: number): string {
    const nf = this.node('Cast', [this.node('Squeeze', [n, this.ints([0])])], { to: attr.int(1) });
    const r = this.node('Range', [this.scalar(0), nf, this.scalar(1)]);
    const ge = (k: number) =>
      this.node('Cast', [this.node('GreaterOrEqual', [r, this.node('Sub', [nf, this.scalar(k)])])], {
        to: attr.int(1),
      });
    return this.add(ge(size), ge(shift));
  }

  /**
   * Region labels of a shifted hp×wp map, partitioned into hs×ws windows: [nWin, hs·ws]. The label of pixel
   * (y, x) is 3·row label + column label, which is the counter Swin's nested slice loops assign.
   */
  windowLabels(hp: string, wp: string, hs: number, ws: number, shiftH: number, shiftW: number): string {
    const rows = this.node('Unsqueeze', [this.regionLabels(hp, hs, shiftH), this.ints([1])]);
    const cols = this.node('Unsqueeze', [this.regionLabels(wp, ws, shiftW), this.ints([0])]);
    const img = this.add(this.mul(rows, this.scalar(3)), cols);
    const shape = this.concatInts([
      this.node('Div', [hp, this.ints([hs])]),
      [hs],
      this.node('Div', [wp, this.ints([ws])]),
      [ws],
    ]);
    const t = this.node('Transpose', [this.node('Reshape', [img, shape])], { perm: attr.ints([0, 2, 1, 3]) });
    return this.node('Reshape', [t, this.ints([-1, hs * ws])]);
  }

  /** mask[w, i, j] = 0 where query label i equals key label j of window w, else −100: [nWin, Nq, Nk]. */
  labelMask(queryLabels: string, keyLabels: string): string {
    const eq = this.node('Equal', [
      this.node('Unsqueeze', [queryLabels, this.ints([2])]),
      this.node('Unsqueeze', [keyLabels, this.ints([1])]),
    ]);
    return this.node('Where', [eq, this.scalar(0), this.scalar(MASK_VALUE)]);
  }

  /**
   * softmax(q·kᵀ + bias [+ mask]) · v over windows. q [nWB, heads, Nq, d] (already scaled), k and v
   * [nWB, heads, Nk, d]; bias a [heads, Nq, Nk] initializer; mask [nWin, Nq, Nk] broadcast over the batch.
   */
  windowAttention(q: string, k: string, v: string, bias: string, heads: number, mask?: string): string {
    let attn = this.add(this.node('MatMul', [q, this.node('Transpose', [k], { perm: attr.ints([0, 1, 3, 2]) })]), bias);
    if (mask) {
      const shape = this.node('Shape', [attn]);
      const grouped = this.node('Reshape', [
        attn,
        this.concatInts([[-1], this.dim(mask, 0), [heads], this.dim(mask, 1), this.dim(mask, 2)]),
      ]);
      attn = this.node('Reshape', [this.add(grouped, this.node('Unsqueeze', [mask, this.ints([1])])), shape]);
    }
    return this.node('MatMul', [this.node('Softmax', [attn], { axis: attr.int(-1) }), v]);
  }

  /**
   * The reconstruction tails DAT and SRFormer share with SwinIR, on the NCHW features after
   * conv_after_body + the shallow features.
   */
  upsampleTail(x: string, kind: UpsamplerKind, scale: number): string {
    if (kind === 'pixelshuffledirect') {
      const y = this.conv(x, 'upsample.0');
      return scale === 1 ? y : this.node('DepthToSpace', [y], crd(scale));
    }
    let y = this.leakyRelu(this.conv(x, 'conv_before_upsample.0'), 0.01);
    if (kind === 'nearest+conv') {
      y = this.leakyRelu(this.conv(this.g.resizeNearest(y, 2, 2), 'conv_up1'), 0.2);
      y = this.leakyRelu(this.conv(this.g.resizeNearest(y, 2, 2), 'conv_up2'), 0.2);
      return this.conv(this.leakyRelu(this.conv(y, 'conv_hr'), 0.2), 'conv_last');
    }
    for (let i = 0; this.has(`upsample.${2 * i}.weight`); i++) {
      const w = this.t(`upsample.${2 * i}.weight`);
      y = this.node('DepthToSpace', [this.conv(y, `upsample.${2 * i}`)], crd(w.shape[0] === 9 * w.shape[1]! ? 3 : 2));
    }
    return this.conv(y, 'conv_last');
  }

  /** conv (1conv) or conv → lrelu → 1×1 → lrelu → conv (3conv), on NCHW. */
  resiConv(x: string, prefix: string, kind: ResiConnection): string {
    if (kind === '1conv') return this.conv(x, prefix);
    const a = this.leakyRelu(this.conv(x, `${prefix}.0`), 0.2);
    const b = this.leakyRelu(this.conv(a, `${prefix}.2`), 0.2);
    return this.conv(b, `${prefix}.4`);
  }
}

export type UpsamplerKind = 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv' | 'none';
export type ResiConnection = '1conv' | '3conv';

/** torch.nn.PixelShuffle is DepthToSpace in column-row-depth order. */
function crd(scale: number) {
  return { blocksize: attr.int(scale), mode: attr.string('CRD') };
}

export function transpose2d(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

/** How many `${prefix}.N.` entries a state dict has (N = 0, 1, …, contiguous). */
export function countIndexed(dict: StateDict, prefix: string): number {
  const seen = new Set<number>();
  const re = new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.(\\d+)\\.`);
  for (const k of dict.keys()) {
    const m = re.exec(k);
    if (m) seen.add(Number(m[1]));
  }
  let n = 0;
  while (seen.has(n)) n++;
  return n;
}

/**
 * Scale and kind of the reconstruction tail from its keys: `upsample.0` alone with s²·C outputs is the
 * one-step (lightweight) tail; conv_before_upsample + upsample.{0,2,…} (×2 each, ×3 for a 9× conv) the
 * classical one; conv_up1/conv_hr the real-world nearest+conv ×4; conv_last alone no upsampling.
 */
export function detectUpsampler(
  dict: StateDict,
  inChannels: number,
  arch: string,
): { kind: UpsamplerKind; scale: number } {
  const get = (k: string) => dict.get(k);
  if (get('conv_up1.weight') && get('conv_hr.weight')) return { kind: 'nearest+conv', scale: 4 };
  if (get('conv_before_upsample.0.weight')) {
    let scale = 1;
    for (let i = 0; ; i += 2) {
      const w = get(`upsample.${i}.weight`);
      if (!w) break;
      const ratio = w.shape[0]! / w.shape[1]!;
      if (ratio !== 4 && ratio !== 9)
        throw new UnsupportedArchitectureError(
          `${arch}: upsample.${i} has ${w.shape[0]} outputs for ${w.shape[1]} inputs`,
        );
      scale *= Math.sqrt(ratio);
    }
    return { kind: 'pixelshuffle', scale };
  }
  const one = get('upsample.0.weight');
  if (one) {
    const scale = Math.round(Math.sqrt(one.shape[0]! / inChannels));
    if (scale * scale * inChannels !== one.shape[0])
      throw new UnsupportedArchitectureError(
        `${arch}: upsample.0 gives ${one.shape[0]} channels for ${inChannels} colours`,
      );
    return { kind: 'pixelshuffledirect', scale };
  }
  return { kind: 'none', scale: 1 };
}
