/**
 * ONNX-graph builders shared by the window-attention transformers (SwinIR, HAT, and DAT/SRFormer):
 * LayerNorm, Linear, GELU MLP, reflect padding to the window multiple and the crop back, window partition
 * and reverse, the cyclic shift, the relative-position bias, the shifted-window mask and multi-head attention.
 *
 * Everything is standard opset-17 ONNX that onnxruntime's CPU provider runs (Reshape, Transpose, MatMul,
 * Softmax, Gather, Slice, Concat, LayerNormalization, Erf…). Spatial sizes are dynamic: the graph pads its
 * input to the window multiple, so every window operation sees a padded size, and the shifted-window mask is
 * computed in the graph from that size (the mask depends on it, so it cannot be a constant).
 *
 * Layouts: images are NCHW (`[B, C, H, W]`, what Conv wants); token maps are NHWC (`[B, H, W, C]`, so
 * LayerNorm and Linear act on the last axis); windows are `[B, nWin, N, C]` with N = window².
 */
import { UnsupportedArchitectureError } from '../architectures/architecture.js';
import { imagePorts, RGB_MEAN } from './graphOps.js';
import { attr, GraphBuilder } from './onnxWriter.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

/** torch.nn.LayerNorm's default epsilon. */
export const LAYER_NORM_EPS = 1e-5;
/** The value torch's Swin implementations put between windows that must not attend to each other. */
export const SHIFT_MASK_VALUE = -100;

/** Row-major [rows, cols] → [cols, rows]. */
export function transpose2d(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

/**
 * Swin's relative_position_index for a wh×ww window: entry (i, j) indexes the (2wh−1)(2ww−1) bias table for
 * query token i and key token j. Recomputed here rather than read from the checkpoint, where it is an
 * optional buffer.
 */
export function relativePositionIndex(wh: number, ww = wh): number[] {
  const n = wh * ww;
  const out = new Array<number>(n * n);
  for (let i = 0; i < n; i++) {
    const yi = Math.floor(i / ww);
    const xi = i % ww;
    for (let j = 0; j < n; j++) {
      const yj = Math.floor(j / ww);
      const xj = j % ww;
      out[i * n + j] = (yi - yj + wh - 1) * (2 * ww - 1) + (xi - xj + ww - 1);
    }
  }
  return out;
}

/** Number of consecutive `${prefix}.N.` entries whose key `${prefix}.N.${probe}` exists. */
export function countSeq(dict: StateDict, prefix: string, probe: string): number {
  let n = 0;
  while (dict.has(`${prefix}.${n}.${probe}`)) n++;
  return n;
}

/** Window size from a Swin relative-position table of (2w−1)² rows. */
export function windowFromTable(table: Tensor, where: string): number {
  const side = Math.round(Math.sqrt(table.shape[0]!));
  if (side * side !== table.shape[0] || side % 2 !== 1)
    throw new UnsupportedArchitectureError(
      `${where}: a relative position table of ${table.shape[0]} rows is not (2w−1)²`,
    );
  return (side + 1) / 2;
}

/** The state-dict accessor the architecture builders use: a missing key is an unsupported checkpoint. */
export function tensorGetter(dict: StateDict, arch: string): (key: string) => Tensor {
  return (key) => {
    const t = dict.get(key);
    if (!t) throw new UnsupportedArchitectureError(`not a ${arch} checkpoint: ${key} is missing`);
    return t;
  };
}

/** Per-resolution values the window operations need; make one per feature size with {@link WindowGraph.grid}. */
export interface WindowGrid {
  window: number;
  channels: number;
  /** int64 [1]: the (padded) width, and the number of windows across it. */
  width: string;
  windowsAcross: string;
}

export interface AttentionWeights {
  qkvWeight: Tensor;
  qkvBias: Tensor | null;
  projWeight: Tensor;
  projBias: Tensor | null;
  heads: number;
}

/** Wraps a GraphBuilder with the layer helpers; initializer names stay the state-dict keys they come from. */
export class WindowGraph {
  private counter = 0;
  private readonly params = new Map<string, string>();

  constructor(readonly g: GraphBuilder) {}

  private uid(prefix: string): string {
    return `${prefix}__${this.counter++}`;
  }

  /** An initializer added once per name (the same key asked twice shares one tensor). */
  param(name: string, dims: number[], data: Float32Array): string {
    const known = this.params.get(name);
    if (known) return known;
    this.params.set(name, this.g.weight(name, dims, data));
    return name;
  }

  i64(values: number[]): string {
    return this.g.int64s(this.uid('i64'), values);
  }

  f32(values: number[], dims: number[] = [values.length]): string {
    return this.g.weight(this.uid('f32'), dims, Float32Array.from(values));
  }

  /** int64 [end − start]: dims start..end of x's shape. */
  shape(x: string, start: number, end: number): string {
    return this.g.node('Shape', [x], { start: attr.int(start), end: attr.int(end) });
  }

  node(op: string, inputs: string[], attrs: Parameters<GraphBuilder['node']>[2] = {}, output?: string): string {
    return this.g.node(op, inputs, attrs, output);
  }

  add(a: string, b: string): string {
    return this.g.node('Add', [a, b]);
  }

  mul(a: string, b: string): string {
    return this.g.node('Mul', [a, b]);
  }

  reshape(x: string, shape: number[] | string): string {
    return this.g.node('Reshape', [x, typeof shape === 'string' ? shape : this.i64(shape)]);
  }

  transpose(x: string, perm: number[]): string {
    return this.g.node('Transpose', [x], { perm: attr.ints(perm) });
  }

  concat(xs: string[], axis: number): string {
    return this.g.node('Concat', xs, { axis: attr.int(axis) });
  }

  slice(x: string, starts: number[] | string, ends: number[] | string, axes: number[]): string {
    const s = typeof starts === 'string' ? starts : this.i64(starts);
    const e = typeof ends === 'string' ? ends : this.i64(ends);
    return this.g.node('Slice', [x, s, e, this.i64(axes)]);
  }

  toNhwc(x: string): string {
    return this.transpose(x, [0, 2, 3, 1]);
  }

  toNchw(x: string): string {
    return this.transpose(x, [0, 3, 1, 2]);
  }

  /** nn.Conv2d with 'same' padding (k−1)/2, stride 1, on NCHW. */
  conv(x: string, prefix: string, get: (key: string) => Tensor, opts: { bias?: boolean; group?: number } = {}): string {
    const w = get(`${prefix}.weight`);
    const [kh, kw] = [w.shape[2]!, w.shape[3]!];
    const b = opts.bias === false ? null : get(`${prefix}.bias`);
    const ph = (kh - 1) / 2;
    const pw = (kw - 1) / 2;
    return this.g.conv(
      x,
      this.param(`${prefix}.weight`, w.shape, w.data),
      b ? this.param(`${prefix}.bias`, b.shape, b.data) : null,
      [kh, kw],
      [ph, pw, ph, pw],
      { group: opts.group },
    );
  }

  /** nn.Linear on the last axis: x·Wᵀ + b, with Wᵀ stored once at conversion time. */
  linear(x: string, name: string, weight: Tensor, bias: Tensor | null): string {
    const [out, inp] = weight.shape as [number, number];
    const w = this.param(`${name}.weight_t`, [inp, out], transpose2d(weight.data, out, inp));
    const y = this.g.node('MatMul', [x, w]);
    return bias ? this.add(y, this.param(`${name}.bias`, [out], bias.data)) : y;
  }

  layerNorm(x: string, name: string, weight: Tensor, bias: Tensor, eps = LAYER_NORM_EPS): string {
    const c = weight.data.length;
    return this.g.node(
      'LayerNormalization',
      [x, this.param(`${name}.weight`, [c], weight.data), this.param(`${name}.bias`, [c], bias.data)],
      { axis: attr.int(-1), epsilon: attr.float(eps) },
    );
  }

  /** torch's exact (erf) GELU: opset 17 has no Gelu op. */
  gelu(x: string): string {
    const erf = this.g.node('Erf', [this.mul(x, this.f32([Math.SQRT1_2], [1]))]);
    return this.mul(this.mul(x, this.add(erf, this.f32([1], [1]))), this.f32([0.5], [1]));
  }

  /** Swin's Mlp: fc1 → GELU → fc2, on the last axis. */
  mlp(x: string, prefix: string, get: (key: string) => Tensor): string {
    const h = this.gelu(this.linear(x, `${prefix}.fc1`, get(`${prefix}.fc1.weight`), get(`${prefix}.fc1.bias`)));
    return this.linear(h, `${prefix}.fc2`, get(`${prefix}.fc2.weight`), get(`${prefix}.fc2.bias`));
  }

  /** (multiple − n mod multiple) mod multiple: the padding that makes n (int64 [1]) a multiple. */
  protected padAmount(n: string, multiple: number): string {
    const m = this.i64([multiple]);
    return this.g.node('Mod', [this.g.node('Sub', [m, this.g.node('Mod', [n, m])]), m]);
  }

  /**
   * F.pad(x, (0, pw, 0, ph), 'reflect') to multiples of `multiple` on NCHW, as the transformers'
   * check_image_size does, and still defined where a reflection cannot reach (PyTorch refuses a pad ≥ the side
   * and onnxruntime a side of 1, e.g. a 6-pixel-wide image with a 16-pixel window): there the first side−1
   * pixels are reflected and the rest repeats the edge. Sizes PyTorch accepts get exactly its padding.
   * Returns the padded image and the original H and W (int64 [1] each) for {@link cropToScaled}.
   */
  reflectPadToMultiple(x: string, multiple: number): { x: string; h: string; w: string } {
    const h = this.shape(x, 2, 3);
    const w = this.shape(x, 3, 4);
    const zero = this.i64([0]);
    const one = this.i64([1]);
    const two = this.i64([2]);
    const sub = (a: string, b: string) => this.g.node('Sub', [a, b]);
    const pads = (ph: string, pw: string) => this.concat([this.i64([0, 0, 0, 0, 0, 0]), ph, pw], 0);
    // A side of 1 has nothing to reflect: repeat it once first (only inputs PyTorch cannot run).
    const grow = (n: string) => this.g.node('Max', [sub(two, n), zero]);
    const [gh, gw] = [grow(h), grow(w)];
    const y0 = this.g.node('Pad', [x, pads(gh, gw)], { mode: attr.string('edge') });
    const [th, tw] = [sub(this.padAmount(h, multiple), gh), sub(this.padAmount(w, multiple), gw)];
    const reach = (pad: string, n: string, g: string) => this.g.node('Min', [pad, sub(this.add(n, g), one)]);
    const [rh, rw] = [reach(th, h, gh), reach(tw, w, gw)];
    const y1 = this.g.node('Pad', [y0, pads(rh, rw)], { mode: attr.string('reflect') });
    const y2 = this.g.node('Pad', [y1, pads(sub(th, rh), sub(tw, rw))], { mode: attr.string('edge') });
    return { x: y2, h, w };
  }

  /** x[:, :, :h·scale, :w·scale] — the crop back after {@link reflectPadToMultiple}. */
  cropToScaled(x: string, h: string, w: string, scale: number, output?: string): string {
    const s = this.i64([scale]);
    const ends = this.concat([this.mul(h, s), this.mul(w, s)], 0);
    return this.g.node('Slice', [x, this.i64([0, 0]), ends, this.i64([2, 3])], {}, output);
  }

  /** torch.roll(x, shifts=(shift, shift), dims=(1, 2)) on NHWC, as two Slice+Concat pairs. */
  roll(x: string, shift: number): string {
    let y = x;
    for (const axis of [1, 2]) {
      // roll by +s: the last s rows come first; by −s: the first s rows go last.
      const cut = -shift;
      const tail = this.slice(y, [cut], [Number.MAX_SAFE_INTEGER], [axis]);
      const head = this.slice(y, [0], [cut], [axis]);
      y = this.concat([tail, head], axis);
    }
    return y;
  }

  /** The dynamic sizes window partition/reverse need, read once from an NHWC token map. */
  grid(tokens: string, window: number, channels: number): WindowGrid {
    const width = this.shape(tokens, 2, 3);
    return { window, channels, width, windowsAcross: this.g.node('Div', [width, this.i64([window])]) };
  }

  /** [B, H, W, C] → [B, nWin, ws², C] (windows in row-major order, as Swin's window_partition). */
  windowPartition(x: string, grid: WindowGrid): string {
    const { window: ws, channels: c } = grid;
    const split = this.reshape(x, this.concat([this.i64([0, -1, ws]), grid.windowsAcross, this.i64([ws, c])], 0));
    return this.reshape(this.transpose(split, [0, 1, 3, 2, 4, 5]), [0, -1, ws * ws, c]);
  }

  /** [B, nWin, ws², C] → [B, H, W, C], the inverse of {@link windowPartition}. */
  windowReverse(x: string, grid: WindowGrid): string {
    const { window: ws, channels: c } = grid;
    const split = this.reshape(x, this.concat([this.i64([0, -1]), grid.windowsAcross, this.i64([ws, ws, c])], 0));
    return this.reshape(
      this.transpose(split, [0, 1, 3, 2, 4, 5]),
      this.concat([this.i64([0, -1]), grid.width, this.i64([c])], 0),
    );
  }

  /**
   * Swin's SW-MSA mask for the padded size of `tokens` ([B, H, W, C]), built in the graph:
   * each pixel is labelled by which of the three row bands [0, H−ws), [H−ws, H−shift), [H−shift, H) and the
   * three column bands it falls in; tokens of one window with different labels get −100.
   * Returns [nWin, 1, N, N], broadcasting against attention scores [B, nWin, heads, N, N].
   */
  shiftedWindowMask(tokens: string, grid: WindowGrid, shift: number): string {
    const ws = grid.window;
    const band = (size: string) => {
      const n = this.g.node('Squeeze', [size, this.i64([0])]);
      const idx = this.g.node('Range', [this.i64Scalar(0), n, this.i64Scalar(1)]);
      const ge = (k: number) =>
        this.g.node('Cast', [this.g.node('GreaterOrEqual', [idx, this.g.node('Sub', [n, this.i64Scalar(k)])])], {
          to: attr.int(1),
        });
      return this.add(ge(ws), ge(shift));
    };
    const rows = band(this.shape(tokens, 1, 2));
    const cols = band(grid.width);
    const labels = this.add(
      this.mul(this.g.node('Unsqueeze', [rows, this.i64([1])]), this.f32([3], [1])),
      this.g.node('Unsqueeze', [cols, this.i64([0])]),
    );
    const split = this.reshape(labels, this.concat([this.i64([-1, ws]), grid.windowsAcross, this.i64([ws])], 0));
    const windows = this.reshape(this.transpose(split, [0, 2, 1, 3]), [-1, ws * ws]);
    const diff = this.g.node('Sub', [
      this.g.node('Unsqueeze', [windows, this.i64([1])]),
      this.g.node('Unsqueeze', [windows, this.i64([2])]),
    ]);
    const differs = this.g.node('Cast', [this.g.node('Not', [this.g.node('Equal', [diff, this.f32([0], [1])])])], {
      to: attr.int(1),
    });
    return this.g.node('Unsqueeze', [this.mul(differs, this.f32([SHIFT_MASK_VALUE], [1])), this.i64([1])]);
  }

  /** A 0-d int64 constant (Range wants scalars). */
  private i64Scalar(v: number): string {
    return this.g.node('Squeeze', [this.i64([v]), this.i64([0])]);
  }

  /**
   * The relative-position bias [heads, N, M] gathered in the graph from the learned table
   * ([entries, heads]) and a constant index (N·M entries, shared by every block that uses the same name).
   */
  relativePositionBias(name: string, table: Tensor, indexName: string, index: number[], n: number, m: number): string {
    const [entries, heads] = table.shape as [number, number];
    const max = index.reduce((a, b) => Math.max(a, b), 0);
    if (max >= entries)
      throw new UnsupportedArchitectureError(
        `${name}: the relative position table has ${entries} rows but the window needs ${max + 1}`,
      );
    let idx = this.params.get(indexName);
    if (!idx) {
      idx = this.g.int64s(indexName, index);
      this.params.set(indexName, idx);
    }
    const rows = this.g.node('Gather', [this.param(name, table.shape, table.data), idx], { axis: attr.int(0) });
    return this.transpose(this.reshape(rows, [n, m, heads]), [2, 0, 1]);
  }

  /** [B, nWin, N, C] → per-head [B, nWin, heads, N, d] (or [.., d, N] with `keyLayout`, ready for q·kᵀ). */
  splitHeads(x: string, heads: number, channels: number, keyLayout = false): string {
    const r = this.reshape(x, [0, 0, 0, heads, channels / heads]);
    return this.transpose(r, keyLayout ? [0, 1, 3, 4, 2] : [0, 1, 3, 2, 4]);
  }

  /** [B, nWin, heads, N, d] → [B, nWin, N, heads·d]. */
  mergeHeads(x: string, channels: number): string {
    return this.reshape(this.transpose(x, [0, 1, 3, 2, 4]), [0, 0, 0, channels]);
  }

  /** softmax(q·kᵀ + bias + mask)·v with q already scaled; q [B,nWin,h,N,d], kT [B,nWin,h,d,M], v [B,nWin,h,M,d]. */
  attention(q: string, kT: string, v: string, bias: string | null, mask: string | null): string {
    let scores = this.g.node('MatMul', [q, kT]);
    if (bias) scores = this.add(scores, bias);
    if (mask) scores = this.add(scores, mask);
    return this.g.node('MatMul', [this.g.node('Softmax', [scores], { axis: attr.int(-1) }), v]);
  }

  /**
   * Swin's WindowAttention on windows [B, nWin, N, C]: one qkv Linear (split into q, k and v at conversion
   * time, the head_dim^−½ scale folded into q's weights), attention per head, then proj.
   */
  windowAttention(x: string, name: string, w: AttentionWeights, bias: string | null, mask: string | null): string {
    const c = w.qkvWeight.shape[1]!;
    if (w.qkvWeight.shape[0] !== 3 * c || c % w.heads !== 0)
      throw new UnsupportedArchitectureError(
        `${name}: qkv weight [${w.qkvWeight.shape.join(', ')}] does not fit ${w.heads} heads`,
      );
    const scale = (c / w.heads) ** -0.5;
    const part = (i: number, factor: number) => {
      const weight = w.qkvWeight.data.slice(i * c * c, (i + 1) * c * c).map((v) => v * factor);
      const b = w.qkvBias ? w.qkvBias.data.slice(i * c, (i + 1) * c).map((v) => v * factor) : null;
      return this.linear(
        x,
        `${name}.qkv.${'qkv'[i]}`,
        { shape: [c, c], data: weight },
        b ? { shape: [c], data: b } : null,
      );
    };
    const q = this.splitHeads(part(0, scale), w.heads, c);
    const kT = this.splitHeads(part(1, 1), w.heads, c, true);
    const v = this.splitHeads(part(2, 1), w.heads, c);
    const out = this.mergeHeads(this.attention(q, kT, v, bias, mask), c);
    return this.linear(out, `${name}.proj`, w.projWeight, w.projBias);
  }
}

/**
 * One Swin transformer block on NHWC tokens (SwinIR's RSTB blocks, DRCT's dense blocks): (shifted) window
 * attention and the MLP, each with its residual. `qkvBias: false` for blocks trained with qkv_bias=False.
 */
export function swinBlock(
  w: WindowGraph,
  x: string,
  prefix: string,
  get: (k: string) => Tensor,
  opts: {
    grid: WindowGrid;
    heads: number;
    shift: number;
    mask: string | null;
    indexName: string;
    index: number[];
    qkvBias?: boolean;
  },
): string {
  const ws = opts.grid.window;
  const n = ws * ws;
  let h = w.layerNorm(x, `${prefix}.norm1`, get(`${prefix}.norm1.weight`), get(`${prefix}.norm1.bias`));
  if (opts.shift > 0) h = w.roll(h, -opts.shift);
  const bias = w.relativePositionBias(
    `${prefix}.attn.relative_position_bias_table`,
    get(`${prefix}.attn.relative_position_bias_table`),
    opts.indexName,
    opts.index,
    n,
    n,
  );
  const attn = w.windowAttention(
    w.windowPartition(h, opts.grid),
    `${prefix}.attn`,
    {
      qkvWeight: get(`${prefix}.attn.qkv.weight`),
      qkvBias: opts.qkvBias === false ? null : get(`${prefix}.attn.qkv.bias`),
      projWeight: get(`${prefix}.attn.proj.weight`),
      projBias: get(`${prefix}.attn.proj.bias`),
      heads: opts.heads,
    },
    bias,
    opts.shift > 0 ? opts.mask : null,
  );
  h = w.windowReverse(attn, opts.grid);
  if (opts.shift > 0) h = w.roll(h, opts.shift);
  const y = w.add(x, h);
  const m = w.layerNorm(y, `${prefix}.norm2`, get(`${prefix}.norm2.weight`), get(`${prefix}.norm2.bias`));
  return w.add(y, w.mlp(m, `${prefix}.mlp`, get));
}

/**
 * The classical reconstruction tail of SwinIR and HAT (one definition, so the two cannot drift): conv_before_upsample
 * and nn.LeakyReLU() with its default slope, then each upsample.{0,2,…} conv and a pixel shuffle by the root of its
 * outputs over conv_before_upsample's (×2 or ×3, validated at detection), then conv_last.
 */
export function pixelShuffleTail(w: WindowGraph, body: string, dict: StateDict, get: (key: string) => Tensor): string {
  let y = w.node('LeakyRelu', [w.conv(body, 'conv_before_upsample.0', get)], { alpha: attr.float(0.01) });
  const numFeat = get('conv_before_upsample.0.weight').shape[0]!;
  for (let i = 0; dict.has(`upsample.${i}.weight`); i += 2) {
    const r = Math.round(Math.sqrt(get(`upsample.${i}.weight`).shape[0]! / numFeat));
    y = w.node('DepthToSpace', [w.conv(y, `upsample.${i}`, get)], { blocksize: attr.int(r), mode: attr.string('CRD') });
  }
  return w.conv(y, 'conv_last', get);
}

/** The RSTB / conv_after_body residual conv: one 3×3 conv, or 3×3 → 1×1 → 3×3 with LeakyReLU(0.2). */
export function residualConv(
  w: WindowGraph,
  x: string,
  prefix: string,
  kind: '1conv' | '3conv',
  get: (k: string) => Tensor,
): string {
  if (kind === '1conv') return w.conv(x, prefix, get);
  const lrelu = (v: string) => w.node('LeakyRelu', [v], { alpha: attr.float(0.2) });
  return w.conv(lrelu(w.conv(lrelu(w.conv(x, `${prefix}.0`, get)), `${prefix}.2`, get)), `${prefix}.4`, get);
}

/** Subtracts the mean and scales (the Swin family's input normalisation); returns x unchanged when a no-op. */
export function normalizeInput(w: WindowGraph, x: string, mean: number[] | null, range: number): string {
  let y = x;
  if (mean) y = w.node('Sub', [y, w.f32(mean, [1, mean.length, 1, 1])]);
  if (range !== 1) y = w.mul(y, w.f32([range], [1]));
  return y;
}

export function denormalizeOutput(w: WindowGraph, x: string, mean: number[] | null, range: number): string {
  let y = x;
  if (range !== 1) y = w.mul(y, w.f32([1 / range], [1]));
  if (mean) y = w.add(y, w.f32(mean, [1, mean.length, 1, 1]));
  return y;
}

/** What {@link swinHead} builds, for the rest of the network and its crop back. */
export interface SwinHead {
  ports: ReturnType<typeof imagePorts>;
  /** The padded input and its original H and W (int64 [1] each). */
  padded: { x: string; h: string; w: string };
  mean: number[] | null;
  /** The padded, normalised input (SwinIR's 1× restoration adds it back). */
  normalized: string;
  /** conv_first's features (NCHW), the shallow features the body's output is added to. */
  feat: string;
  /** The same features as NHWC tokens, after the patch-embed LayerNorm where the checkpoint has one. */
  tokens: string;
  grid: WindowGrid;
}

/**
 * The head SwinIR, HAT and DRCT share: the image ports (RGB ports for grey and RGBA models when asked: imports;
 * tests compare the bare model), reflect padding to the window (their check_image_size or model wrapper; it
 * commutes with the per-channel normalisation, so the networks that normalise first and those that pad first
 * agree), the mean and range normalisation, conv_first, and the tokens with their window grid.
 */
export function swinHead(
  w: WindowGraph,
  dict: StateDict,
  get: (key: string) => Tensor,
  spec: { inChannels: number; outChannels: number; embedDim: number; windowSize: number },
  opts: { range: number; rgbPorts: boolean },
): SwinHead {
  const mean = spec.inChannels === 3 ? RGB_MEAN : null;
  const ports = imagePorts(w.g, spec, opts.rgbPorts);
  const padded = w.reflectPadToMultiple(ports.input, spec.windowSize);
  const normalized = normalizeInput(w, padded.x, mean, opts.range);
  const feat = w.conv(normalized, 'conv_first', get);
  let tokens = w.toNhwc(feat);
  if (dict.has('patch_embed.norm.weight'))
    tokens = w.layerNorm(tokens, 'patch_embed.norm', get('patch_embed.norm.weight'), get('patch_embed.norm.bias'));
  return { ports, padded, mean, normalized, feat, tokens, grid: w.grid(tokens, spec.windowSize, spec.embedDim) };
}

/**
 * HAT's and DRCT's end, on the body's tokens: the final LayerNorm, conv_after_body ('1conv') or none, plus the
 * shallow features, the classical pixel-shuffle tail, the mean added back, cropped to the input's size × scale.
 */
export function classicalEnd(
  w: WindowGraph,
  dict: StateDict,
  get: (key: string) => Tensor,
  tokens: string,
  head: SwinHead,
  o: { resiConnection: '1conv' | 'identity'; scale: number },
): string {
  let body = w.toNchw(w.layerNorm(tokens, 'norm', get('norm.weight'), get('norm.bias')));
  if (o.resiConnection === '1conv') body = w.conv(body, 'conv_after_body', get);
  const out = denormalizeOutput(w, pixelShuffleTail(w, w.add(body, head.feat), dict, get), head.mean, 1);
  return w.cropToScaled(out, head.padded.h, head.padded.w, o.scale);
}
