/**
 * What DAT and SRFormer need beyond the shared window-attention builders (windowAttention.ts): a graph bound
 * to its state dict (initializers keep their key), convs with an eval-mode BatchNorm folded in, 1×1 convs as
 * MatMuls on NHWC maps, zero padding and cropping of NHWC maps, rolls by different amounts per axis,
 * rectangle windows (DAT's H_sp×W_sp), shifted-window masks for rectangle windows and across two resolutions
 * (SRFormer's keys live on a half-resolution grid), and the reconstruction tails.
 *
 * Layouts follow windowAttention.ts: NCHW images, NHWC token maps, windows [B, nWin, N, C] in raster order.
 * Sizes stay dynamic: window counts, padding and masks are computed in the graph from `Shape`.
 */
import { UnsupportedArchitectureError } from '../architectures/architecture.js';
import { attr, GraphBuilder } from './onnxWriter.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';
import { LAYER_NORM_EPS, residualConv, SHIFT_MASK_VALUE, transpose2d, WindowGraph } from './windowAttention.js';

const INT64_MAX = 2 ** 62;

export type UpsamplerKind = 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv' | 'none';
export type ResiConnection = '1conv' | '3conv';

export class TokenGraph extends WindowGraph {
  constructor(
    name: string,
    private readonly dict: StateDict,
    /** How errors name the expected file, e.g. "an SRFormer checkpoint". */
    private readonly expected: string,
  ) {
    super(new GraphBuilder(name));
  }

  /** A checkpoint tensor; a missing one means the file is not the architecture it looked like. */
  readonly get = (key: string): Tensor => {
    const v = this.dict.get(key);
    if (!v) throw new UnsupportedArchitectureError(`not ${this.expected}: ${key} is missing`);
    return v;
  };

  has(key: string): boolean {
    return this.dict.has(key);
  }

  /** A checkpoint tensor as an initializer named after its key. */
  weightOf(key: string): string {
    const v = this.get(key);
    return this.param(key, v.shape, v.data);
  }

  /** torch.nn.Linear `prefix` (bias optional) on the last axis. */
  dense(x: string, prefix: string): string {
    return this.linear(x, prefix, this.get(`${prefix}.weight`), this.dict.get(`${prefix}.bias`) ?? null);
  }

  norm(x: string, prefix: string): string {
    return this.layerNorm(x, prefix, this.get(`${prefix}.weight`), this.get(`${prefix}.bias`));
  }

  scalar(v: number): string {
    return this.f32([v], [1]);
  }

  leakyRelu(x: string, slope: number): string {
    return this.node('LeakyRelu', [x], { alpha: attr.float(slope) });
  }

  sigmoid(x: string): string {
    return this.node('Sigmoid', [x]);
  }

  /** Dimension `axis` of x as an int64 [1]. */
  dim(x: string, axis: number): string {
    return this.shape(x, axis, axis + 1);
  }

  /** Consecutive slices of `axis` with the given widths (torch.split / chunk). */
  split(x: string, axis: number, widths: number[]): string[] {
    let at = 0;
    return widths.map((w) => {
      const s = this.slice(x, [at], [at + w], [axis]);
      at += w;
      return s;
    });
  }

  /** A same-padded Conv2d followed by an eval-mode BatchNorm2d folded into it: W·γ/√(σ²+ε), (b−μ)·γ/√(σ²+ε)+β. */
  convBn(x: string, prefix: string, bn: string, group = 1): string {
    const { weight, bias } = this.foldBn(prefix, bn);
    const k = weight.shape[2]!;
    const p = (k - 1) / 2;
    return this.g.conv(
      x,
      this.param(`${prefix}.weight_bn`, weight.shape, weight.data),
      this.param(`${prefix}.bias_bn`, [bias.length], bias),
      [k, weight.shape[3]!],
      [p, p, p, p],
      { group },
    );
  }

  /** A 1×1 conv (+ an optional folded BatchNorm) on an NHWC map, as a MatMul on the channel axis. */
  pointwise(x: string, prefix: string, bn?: string): string {
    const { weight, bias } = this.foldBn(prefix, bn);
    const [out, inp] = weight.shape as [number, number];
    const w = this.param(`${prefix}.weight_pointwise`, [inp, out], transpose2d(weight.data, out, inp));
    return this.add(this.node('MatMul', [x, w]), this.param(`${prefix}.bias_pointwise`, [out], bias));
  }

  private foldBn(prefix: string, bn?: string): { weight: Tensor; bias: Float32Array } {
    const w = this.get(`${prefix}.weight`);
    const out = w.shape[0]!;
    const b = this.dict.get(`${prefix}.bias`);
    const bias = b ? Float32Array.from(b.data) : new Float32Array(out);
    if (!bn) return { weight: w, bias };
    const gamma = this.get(`${bn}.weight`).data;
    const beta = this.get(`${bn}.bias`).data;
    const mean = this.get(`${bn}.running_mean`).data;
    const variance = this.get(`${bn}.running_var`).data;
    const per = w.data.length / out;
    const data = new Float32Array(w.data.length);
    for (let o = 0; o < out; o++) {
      const s = gamma[o]! / Math.sqrt(variance[o]! + LAYER_NORM_EPS);
      for (let i = 0; i < per; i++) data[o * per + i] = w.data[o * per + i]! * s;
      bias[o] = (bias[o]! - mean[o]!) * s + beta[o]!;
    }
    return { weight: { shape: w.shape, data }, bias };
  }

  /**
   * torch.cat([x, x.flip(axis)], axis)[…, :padded] along `axis` (ATD's and CRAFT's padding: the image, then its
   * mirror with the edge row included), `padded` an int64 [1]: a Gather of rows min(i, 2n−1−i). PyTorch needs
   * n ≥ padded − n; below that the index is clamped to 0 (the graph still runs).
   */
  mirrorPad(x: string, axis: number, padded: string): string {
    const n = this.dim(x, axis);
    const scalar = (v: string) => this.node('Squeeze', [v, this.i64([0])]);
    const i = this.node('Range', [scalar(this.i64([0])), scalar(padded), scalar(this.i64([1]))]);
    const back = this.node('Sub', [this.node('Sub', [this.mul(n, this.i64([2])), this.i64([1])]), i]);
    const idx = this.node('Max', [this.node('Min', [i, back]), this.i64([0])]);
    return this.node('Gather', [x, idx], { axis: attr.int(axis) });
  }

  /**
   * Restormer's gated depth-wise FFN `${p}` on an NCHW map (DITN's and CRAFT's): project_in to 2·hidden, a
   * depth-wise 3×3, GELU of one half times the other, project_out; each conv's bias where the checkpoint has one.
   */
  gatedDwFfn(x: string, p: string): string {
    const conv = (v: string, k: string, group?: number) =>
      this.conv(v, k, this.get, { bias: this.has(`${k}.bias`), group });
    const hidden2 = this.get(`${p}.project_in.weight`).shape[0]!;
    const [x1, x2] = this.split(conv(conv(x, `${p}.project_in`), `${p}.dwconv`, hidden2), 1, [
      hidden2 / 2,
      hidden2 / 2,
    ]);
    return conv(this.mul(this.gelu(x1!), x2!), `${p}.project_out`);
  }

  /** Zero-pads an NHWC map at the bottom and right to multiples of `multiple` (F.pad's default). */
  padNhwc(x: string, multiple: number): string {
    const pads = this.concat(
      [
        this.i64([0, 0, 0, 0, 0]),
        this.padAmount(this.dim(x, 1), multiple),
        this.padAmount(this.dim(x, 2), multiple),
        this.i64([0]),
      ],
      0,
    );
    return this.node('Pad', [x, pads], { mode: attr.string('constant') });
  }

  /** x[:, :H, :W] of an NHWC map, H and W as int64 [1]. */
  cropNhwc(x: string, h: string, w: string): string {
    return this.slice(x, [0, 0], this.concat([h, w], 0), [1, 2]);
  }

  /** torch.roll(x, shifts=(sh, sw), dims=(1, 2)): out[i] = x[i − shift], as Slice + Concat per axis. */
  rollHW(x: string, sh: number, sw: number): string {
    let y = x;
    for (const [axis, s] of [
      [1, sh],
      [2, sw],
    ] as const) {
      if (s === 0) continue;
      // cat(x[−s:], x[:−s]): for s < 0 the first |s| rows move to the end, for s > 0 the last s to the front.
      const head = this.slice(y, [-s], [INT64_MAX], [axis]);
      const tail = this.slice(y, [0], [-s], [axis]);
      y = this.concat([head, tail], axis);
    }
    return y;
  }

  /** [B, Hp, Wp, C] → [B, nWin, hs·ws, C] for hs×ws (rectangle) windows, in raster order (DAT's img2windows). */
  rectWindowPartition(x: string, hs: number, ws: number, c: number): string {
    const across = this.node('Div', [this.dim(x, 2), this.i64([ws])]);
    const split = this.reshape(x, this.concat([this.i64([0, -1, hs]), across, this.i64([ws, c])], 0));
    return this.reshape(this.transpose(split, [0, 1, 3, 2, 4, 5]), [0, -1, hs * ws, c]);
  }

  /** The inverse of rectWindowPartition, back to the [B, Hp, Wp, C] layout of `like`. */
  rectWindowReverse(win: string, hs: number, ws: number, c: number, like: string): string {
    const w = this.dim(like, 2);
    const across = this.node('Div', [w, this.i64([ws])]);
    const split = this.reshape(win, this.concat([this.i64([0, -1]), across, this.i64([hs, ws, c])], 0));
    return this.reshape(
      this.transpose(split, [0, 1, 3, 2, 4, 5]),
      this.concat([this.i64([0, -1]), w, this.i64([c])], 0),
    );
  }

  /**
   * The region label of each row (or column) of a shifted map of `n` rows (int64 [1]), as Swin's calculate_mask
   * assigns it: [0, n−size) → 0, [n−size, n−shift) → 1, [n−shift, n) → 2.
   */
  private regionLabels(n: string, size: number, shift: number): string {
    const nf = this.node('Cast', [this.node('Squeeze', [n, this.i64([0])])], { to: attr.int(1) });
    const zero = this.node('Squeeze', [this.scalar(0), this.i64([0])]);
    const one = this.node('Squeeze', [this.scalar(1), this.i64([0])]);
    const r = this.node('Range', [zero, nf, one]);
    const ge = (k: number) =>
      this.node('Cast', [this.node('GreaterOrEqual', [r, this.node('Sub', [nf, this.scalar(k)])])], {
        to: attr.int(1),
      });
    return this.add(ge(size), ge(shift));
  }

  /**
   * Region labels of a shifted hp×wp map cut into hs×ws windows: [nWin, hs·ws]. Pixel (y, x) gets
   * 3·(row label) + (column label), the counter Swin's nested slice loops assign.
   */
  windowLabels(hp: string, wp: string, hs: number, ws: number, shiftH: number, shiftW: number): string {
    const rows = this.node('Unsqueeze', [this.regionLabels(hp, hs, shiftH), this.i64([1])]);
    const cols = this.node('Unsqueeze', [this.regionLabels(wp, ws, shiftW), this.i64([0])]);
    const img = this.add(this.mul(rows, this.scalar(3)), cols);
    const across = this.node('Div', [wp, this.i64([ws])]);
    const split = this.reshape(img, this.concat([this.i64([-1, hs]), across, this.i64([ws])], 0));
    return this.reshape(this.transpose(split, [0, 2, 1, 3]), [-1, hs * ws]);
  }

  /**
   * [nWin, 1, Nq, Nk]: 0 where query i and key j of a window carry the same label, −100 elsewhere; broadcasts
   * against scores [B, nWin, heads, Nq, Nk].
   */
  labelMask(queryLabels: string, keyLabels: string): string {
    const eq = this.node('Equal', [
      this.node('Unsqueeze', [queryLabels, this.i64([2])]),
      this.node('Unsqueeze', [keyLabels, this.i64([1])]),
    ]);
    const mask = this.node('Where', [eq, this.scalar(0), this.scalar(SHIFT_MASK_VALUE)]);
    return this.node('Unsqueeze', [mask, this.i64([1])]);
  }

  /** The reconstruction tail on the NCHW features (conv_after_body output + shallow features). */
  upsampleTail(x: string, kind: Exclude<UpsamplerKind, 'none'>, scale: number): string {
    const shuffle = (v: string, r: number) =>
      r === 1 ? v : this.node('DepthToSpace', [v], { blocksize: attr.int(r), mode: attr.string('CRD') });
    if (kind === 'pixelshuffledirect') return shuffle(this.conv(x, 'upsample.0', this.get), scale);
    // nn.LeakyReLU(inplace=True) after conv_before_upsample: the default slope.
    let y = this.leakyRelu(this.conv(x, 'conv_before_upsample.0', this.get), 0.01);
    if (kind === 'nearest+conv') {
      y = this.leakyRelu(this.conv(this.g.resizeNearest(y, 2, 2), 'conv_up1', this.get), 0.2);
      y = this.leakyRelu(this.conv(this.g.resizeNearest(y, 2, 2), 'conv_up2', this.get), 0.2);
      return this.conv(this.leakyRelu(this.conv(y, 'conv_hr', this.get), 0.2), 'conv_last', this.get);
    }
    for (let i = 0; this.has(`upsample.${2 * i}.weight`); i++) {
      const w = this.get(`upsample.${2 * i}.weight`);
      y = shuffle(this.conv(y, `upsample.${2 * i}`, this.get), w.shape[0] === 9 * w.shape[1]! ? 3 : 2);
    }
    return this.conv(y, 'conv_last', this.get);
  }

  resiConv(x: string, prefix: string, kind: ResiConnection): string {
    return residualConv(this, x, prefix, kind, this.get);
  }
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
  if (dict.has('conv_up1.weight') && dict.has('conv_hr.weight')) {
    if (dict.has('conv_up3.weight'))
      throw new UnsupportedArchitectureError(`${arch} with a ×8 nearest+conv tail is not supported`);
    return { kind: 'nearest+conv', scale: 4 };
  }
  if (dict.has('conv_before_upsample.0.weight')) {
    let scale = 1;
    for (let i = 0; ; i += 2) {
      const w = dict.get(`upsample.${i}.weight`);
      if (!w) break;
      const ratio = w.shape[0]! / w.shape[1]!;
      if (ratio !== 4 && ratio !== 9)
        throw new UnsupportedArchitectureError(
          `${arch}: upsample.${i} has ${w.shape[0]} outputs for ${w.shape[1]} inputs, not a ×2 or ×3 pixel shuffle`,
        );
      scale *= Math.sqrt(ratio);
    }
    return { kind: 'pixelshuffle', scale };
  }
  const one = dict.get('upsample.0.weight');
  if (one) {
    const scale = Math.round(Math.sqrt(one.shape[0]! / inChannels));
    if (scale * scale * inChannels !== one.shape[0])
      throw new UnsupportedArchitectureError(
        `${arch}: upsample.0 gives ${one.shape[0]} channels, not ${inChannels} colours × scale²`,
      );
    return { kind: 'pixelshuffledirect', scale };
  }
  return { kind: 'none', scale: 1 };
}
