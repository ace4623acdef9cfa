/**
 * Building blocks the state-dict converters share on top of onnxWriter's GraphBuilder: convolutions read
 * from a state dict, the activations and norms torch has and opset 17 lacks as single ops (GELU, Mish, SiLU,
 * GroupNorm, channel LayerNorm), pixel shuffle, and the dynamic-shape plumbing for padding an input to a
 * multiple of a window and cropping the output back.
 */
import { UnsupportedArchitectureError } from '../architectures/architecture.js';
import { attr, GraphBuilder } from './onnxWriter.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

/** A state dict read for one architecture: missing keys name the architecture. */
export class Weights {
  constructor(
    readonly dict: StateDict,
    readonly arch: string,
  ) {}

  get(key: string): Tensor {
    const t = this.dict.get(key);
    if (!t) throw new UnsupportedArchitectureError(`this ${this.arch} checkpoint lacks ${key}`);
    return t;
  }

  has(key: string): boolean {
    return this.dict.has(key);
  }

  /** How many `${prefix}.N` entries exist (consecutive from 0), judged by `${prefix}.N.${probe}` keys or any key. */
  seqLen(prefix: string): number {
    const seen = new Set<number>();
    const re = new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.(\\d+)\\.`);
    for (const k of this.dict.keys()) {
      const m = re.exec(k);
      if (m) seen.add(Number(m[1]));
    }
    return seen.size === 0 ? 0 : Math.max(...seen) + 1;
  }
}

export interface ConvOpts {
  stride?: number;
  /** Symmetric padding; default keeps the size ((k − 1) / 2). */
  pad?: number;
  group?: number;
  output?: string;
}

/** Conv2d with `${prefix}.weight` and the optional `${prefix}.bias`. */
export function convFrom(g: GraphBuilder, w: Weights, x: string, prefix: string, opts: ConvOpts = {}): string {
  const wt = w.get(`${prefix}.weight`);
  if (wt.shape.length !== 4) throw new UnsupportedArchitectureError(`${w.arch}: ${prefix}.weight is not a 2-D conv`);
  const bt = w.dict.get(`${prefix}.bias`);
  return convWith(g, x, prefix, wt, bt ?? null, opts);
}

export function convWith(
  g: GraphBuilder,
  x: string,
  name: string,
  wt: Tensor,
  bt: Tensor | null,
  opts: ConvOpts = {},
): string {
  const [kh, kw] = [wt.shape[2]!, wt.shape[3]!];
  const ph = opts.pad ?? (kh - 1) / 2;
  const pw = opts.pad ?? (kw - 1) / 2;
  const weight = g.weight(`${name}.weight`, wt.shape, wt.data);
  const bias = bt ? g.weight(`${name}.bias`, [bt.data.length], bt.data) : null;
  return g.conv(
    x,
    weight,
    bias,
    [kh, kw],
    [ph, pw, ph, pw],
    {
      ...(opts.stride ? { strides: [opts.stride, opts.stride] as [number, number] } : {}),
      ...(opts.group ? { group: opts.group } : {}),
    },
    opts.output,
  );
}

/** A float constant (scalar, or with `dims`) as an initializer. */
export function constant(g: GraphBuilder, values: number[] | number, dims?: number[]): string {
  const arr = typeof values === 'number' ? [values] : values;
  return g.weight(
    g.freshName('const'),
    dims ?? (typeof values === 'number' ? [] : [arr.length]),
    Float32Array.from(arr),
  );
}

export function int64Const(g: GraphBuilder, values: number[]): string {
  return g.int64s(g.freshName('i64'), values);
}

/** torch's exact (erf) GELU: x · ½(1 + erf(x/√2)). */
export function gelu(g: GraphBuilder, x: string): string {
  const erf = g.node('Erf', [g.node('Mul', [x, constant(g, Math.SQRT1_2)])]);
  return g.node('Mul', [x, g.node('Mul', [g.node('Add', [erf, constant(g, 1)]), constant(g, 0.5)])]);
}

/** Mish: x · tanh(softplus(x)). */
export function mish(g: GraphBuilder, x: string): string {
  return g.node('Mul', [x, g.node('Tanh', [g.node('Softplus', [x])])]);
}

/** SiLU: x · sigmoid(x). */
export function silu(g: GraphBuilder, x: string): string {
  return g.node('Mul', [x, g.node('Sigmoid', [x])]);
}

/** Per-channel affine on an NCHW tensor: x · weight[c] + bias[c]. */
export function channelAffine(g: GraphBuilder, x: string, name: string, weight: Tensor, bias: Tensor | null): string {
  const c = weight.data.length;
  let y = g.node('Mul', [x, g.weight(`${name}.weight`, [c, 1, 1], weight.data)]);
  if (bias) y = g.node('Add', [y, g.weight(`${name}.bias`, [c, 1, 1], bias.data)]);
  return y;
}

/** LayerNorm over the channels of an NCHW tensor (the "LayerNorm2d" of restoration networks). */
export function channelLayerNorm(g: GraphBuilder, w: Weights, x: string, prefix: string, eps: number): string {
  const mean = g.node('ReduceMean', [x], { axes: attr.ints([1]), keepdims: attr.int(1) });
  const d = g.node('Sub', [x, mean]);
  const v = g.node('ReduceMean', [g.node('Mul', [d, d])], { axes: attr.ints([1]), keepdims: attr.int(1) });
  const y = g.node('Div', [d, g.node('Sqrt', [g.node('Add', [v, constant(g, eps)])])]);
  return channelAffine(g, y, prefix, w.get(`${prefix}.weight`), w.get(`${prefix}.bias`));
}

/** torch.nn.GroupNorm(groups, C) as InstanceNormalization over [N, groups, C/groups·H·W], then the affine. */
export function groupNorm(g: GraphBuilder, w: Weights, x: string, prefix: string, groups: number, eps = 1e-5): string {
  const grouped = g.node('Reshape', [x, int64Const(g, [0, groups, -1])]);
  const normed = g.node(
    'InstanceNormalization',
    [
      grouped,
      constant(g, new Array<number>(groups).fill(1), [groups]),
      constant(g, new Array<number>(groups).fill(0), [groups]),
    ],
    { epsilon: attr.float(eps) },
  );
  const back = g.node('Reshape', [normed, g.node('Shape', [x])]);
  return channelAffine(g, back, prefix, w.get(`${prefix}.weight`), w.get(`${prefix}.bias`));
}

/** torch PixelShuffle(r) is DepthToSpace in CRD mode. */
export function pixelShuffle(g: GraphBuilder, x: string, r: number, output?: string): string {
  if (r === 1) return output ? g.node('Identity', [x], {}, output) : x;
  return g.node('DepthToSpace', [x], { blocksize: attr.int(r), mode: attr.string('CRD') }, output);
}

/**
 * torch pixel_unshuffle(x, r) on `channels` channels: SpaceToDepth orders its outputs (i·r + j)·C + c, torch
 * c·r² + i·r + j, so a Gather over the channels puts them in torch's order.
 */
export function pixelUnshuffle(g: GraphBuilder, x: string, r: number, channels: number): string {
  if (r === 1) return x;
  const s2d = g.node('SpaceToDepth', [x], { blocksize: attr.int(r) });
  const order: number[] = [];
  for (let c = 0; c < channels; c++) for (let b = 0; b < r * r; b++) order.push(b * channels + c);
  return g.node('Gather', [s2d, int64Const(g, order)], { axis: attr.int(1) });
}

/** Dims [start, end) of x's shape as a 1-D int64 tensor. */
export function dims(g: GraphBuilder, x: string, start: number, end: number): string {
  return g.node('Shape', [x], { start: attr.int(start), end: attr.int(end) });
}

/**
 * Zero-pads an NCHW tensor at the bottom and right to the next multiple of `multiple` (torch
 * F.pad(x, (0, pw, 0, ph)) as in the architectures' check_image_size), and to at least `minSide` first when
 * the network cannot run on less (the reference would fail there; Crisp pads instead). Returns the padded tensor.
 */
export function padToMultiple(g: GraphBuilder, x: string, multiple: number, minSide = 1): string {
  if (multiple <= 1 && minSide <= 1) return x;
  const hw = dims(g, x, 2, 4);
  const m = int64Const(g, [Math.max(1, multiple)]);
  const side = minSide > 1 ? g.node('Max', [hw, int64Const(g, [minSide, minSide])]) : hw;
  // ceil(side / m) · m − hw
  const target = g.node('Mul', [g.node('Div', [g.node('Add', [side, g.node('Sub', [m, int64Const(g, [1])])]), m]), m]);
  const extra = g.node('Sub', [target, hw]);
  const pads = g.node('Concat', [int64Const(g, [0, 0, 0, 0, 0, 0]), extra], { axis: attr.int(0) });
  return g.node('Pad', [x, pads], { mode: attr.string('constant') });
}

/** Crops an NCHW tensor to (H·scale, W·scale) of `reference`'s spatial size (undoing padToMultiple). */
export function cropToScaled(g: GraphBuilder, x: string, reference: string, scale: number, output?: string): string {
  const ends = g.node('Mul', [dims(g, reference, 2, 4), int64Const(g, [scale])]);
  return g.node('Slice', [x, int64Const(g, [0, 0]), ends, int64Const(g, [2, 3])], {}, output);
}

/**
 * The scale and output channels of a pixel-shuffle conv with `outputs` channels: torch models keep the
 * input's channels when they can, else RGB, RGBA or grey.
 */
export function scaleAndChannels(outputs: number, inChannels: number): { scale: number; outChannels: number } | null {
  for (const c of [inChannels, 3, 4, 1]) {
    if (outputs % c !== 0) continue;
    const s = Math.round(Math.sqrt(outputs / c));
    if (s >= 1 && s * s * c === outputs) return { scale: s, outChannels: c };
  }
  return null;
}

export { attr, GraphBuilder };

/**
 * The DIV2K training set's mean colour, which the BasicSR-family networks (SwinIR, HAT, DAT, SRFormer, SPAN, …)
 * subtract from RGB inputs and add back to their outputs.
 */
export const RGB_MEAN = [0.4488, 0.4371, 0.404];

/** BT.601 luma weights: how an RGB pixel becomes the grey a 1-channel model was trained on. */
const LUMA = [0.299, 0.587, 0.114];

/**
 * The graph's image ports. Crisp's pipeline runs every upscaler on RGB tiles ([n,3,h,w] → [n,3,H,W]; a
 * picture's alpha goes through as its own grey pass), so with `rgb` a model of another channel count is
 * wrapped: a grey model gets the tile's luma (exactly the grey value on grey pictures and on the alpha pass)
 * and its output is repeated into R, G and B; an RGBA model gets the tile with an opaque alpha and its RGB
 * output is kept. Without `rgb` the ports are the model's own channels (what the PyTorch comparison runs).
 */
export function imagePorts(
  g: GraphBuilder,
  channels: { inChannels: number; outChannels: number },
  rgb: boolean,
): { input: string; finish: (x: string) => void; inChannels: number; outChannels: number } {
  if (!rgb || (channels.inChannels === 3 && channels.outChannels === 3)) {
    return {
      input: 'input',
      finish: (x) => void g.node('Identity', [x], {}, 'output'),
      inChannels: channels.inChannels,
      outChannels: channels.outChannels,
    };
  }
  let input = 'input';
  if (channels.inChannels === 1) {
    input = g.conv('input', g.weight('rgb_to_luma', [1, 3, 1, 1], Float32Array.from(LUMA)), null, [1, 1], [0, 0, 0, 0]);
  } else if (channels.inChannels === 4) {
    const first = g.node('Slice', ['input', int64Const(g, [0]), int64Const(g, [1]), int64Const(g, [1])]);
    const opaque = g.node('Add', [g.node('Mul', [first, constant(g, 0)]), constant(g, 1)]);
    input = g.node('Concat', ['input', opaque], { axis: attr.int(1) });
  } else if (channels.inChannels !== 3) {
    throw new UnsupportedArchitectureError(`a model with ${channels.inChannels} input channels cannot run on images`);
  }
  const finish = (x: string): void => {
    if (channels.outChannels === 1) g.node('Concat', [x, x, x], { axis: attr.int(1) }, 'output');
    else if (channels.outChannels === 4)
      g.node('Slice', [x, int64Const(g, [0]), int64Const(g, [3]), int64Const(g, [1])], {}, 'output');
    else if (channels.outChannels === 3) g.node('Identity', [x], {}, 'output');
    else
      throw new UnsupportedArchitectureError(
        `a model with ${channels.outChannels} output channels cannot run on images`,
      );
  };
  return { input, finish, inChannels: 3, outChannels: 3 };
}

/**
 * The end of every converter's build: `x` through the image ports' output, serialised with the spec as the
 * model's doc string (what `crisp models import` and the engine read back).
 */
export function finishModel(
  g: GraphBuilder,
  ports: { finish: (x: string) => void; inChannels: number; outChannels: number },
  x: string,
  spec: object,
): Uint8Array {
  ports.finish(x);
  return g.toBytes({
    inChannels: ports.inChannels,
    outChannels: ports.outChannels,
    producer: 'crisp-convert',
    doc: JSON.stringify(spec),
  });
}
