/**
 * FDAT — Fast Dual Aggregation Transformer (traiNNer-redux 2025, stinkybread/fdat as spandrel packages it; MIT):
 * detection from a state dict and the ONNX graph.
 *
 * Residual groups (blocks, then a 3×3 conv and the group's input) of blocks that alternate
 * - even index: non-shifted window attention with a learned [heads, ws², ws²] bias; the LayerNorm output is
 *   zero-padded to the window inside the attention (padded tokens take part in the softmax, as in PyTorch) and
 *   cropped back;
 * - odd index: channel (XCiT) attention over L2-normalised q and k of all tokens, with a temperature per head;
 * each fused with a depth-wise 3×3 conv + GELU branch of the same LayerNorm output by the simplified interaction
 * module (spatial blocks: the conv branch's pooled channel gate scales the attention; channel blocks: the
 * attention's 1×1 spatial gate scales the conv branch), then a conv-FFN (fc1 → GELU → depth-wise 3×3 → fc2).
 * The tail is traiNNer-redux's UniUpsampleV3, whose kind the uint8 `upsampler.MetaUpsample` buffer records:
 * conv (1×), pixelshuffledirect, pixelshuffle, nearest+conv, dysample, transpose+conv or pa_up. 1× and 2× files
 * may pixel-unshuffle the input into a 4× network (`unshuffle_mod`): reflect-padded to the factor, cropped back.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { dySample } from '../graph/dySample.js';
import { finishModel, imagePorts, pixelShuffle, pixelUnshuffle, Weights } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { relative } from '../graph/transformerCost.js';
import { TokenGraph } from '../graph/transformerGraph.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

/** UniUpsampleV3's modes, in the order MetaUpsample indexes them. */
const UPSAMPLERS = [
  'conv',
  'pixelshuffledirect',
  'pixelshuffle',
  'nearest+conv',
  'dysample',
  'transpose+conv',
  'lda',
  'pa_up',
] as const;
export type FdatUpsampler = Exclude<(typeof UPSAMPLERS)[number], 'lda'>;

export interface FdatSpec {
  kind: 'fdat';
  /** tiny / light / medium / large / xl from the published widths (spandrel's tags), else "custom". */
  variant: string;
  inChannels: number;
  outChannels: number;
  embedDim: number;
  numGroups: number;
  /** Blocks per group (spatial and channel alternating; depth_per_group × 2). */
  blocksPerGroup: number;
  heads: number;
  window: number;
  ffnHidden: number;
  qkvBias: boolean;
  upsampler: FdatUpsampler;
  /** The upsampler's own factor (4 behind an unshuffle). */
  upscale: number;
  /** Pixel-unshuffle factor in front (traiNNer-redux unshuffle_mod; 1 = none). */
  unshuffle: number;
  scale: number;
}

const ARCH = 'FDAT';
const BLOCK0 = 'groups.0.blocks.0';

export function looksLikeFdat(dict: StateDict): boolean {
  return (
    (dict.has('conv_first.weight') || dict.has('conv_first.1.weight')) &&
    [`${BLOCK0}.attn.bias`, `${BLOCK0}.inter.cg.1.weight`, `${BLOCK0}.ffn.fc1.weight`, `${BLOCK0}.n1.weight`].every(
      (k) => dict.has(k),
    )
  );
}

/** The ×2 / ×3 stages of the pixelshuffle, nearest+conv and pa_up tails (2^n or 3). */
function stages(scale: number): number[] | null {
  if (scale === 3) return [3];
  const n = Math.log2(scale);
  return Number.isInteger(n) && n >= 1 ? new Array<number>(n).fill(2) : null;
}

const SIZES: Record<number, string> = { 96: 'tiny', 108: 'light', 120: 'medium', 180: 'large' };

export function detectFdat(dict: StateDict): FdatSpec {
  const w = new Weights(dict, ARCH);
  const meta = dict.get('upsampler.MetaUpsample');
  if (!meta || meta.data.length !== 7) {
    throw new UnsupportedArchitectureError(
      'this FDAT checkpoint lacks upsampler.MetaUpsample (the record of which upsampler it was trained with)',
    );
  }
  const [, index, metaScale, , outChannels] = Array.from(meta.data.subarray(0, 5), Math.round) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const mode = UPSAMPLERS[index];
  if (!mode) throw new UnsupportedArchitectureError(`FDAT upsampler number ${index} is not one Crisp knows`);
  if (mode === 'lda') {
    throw new UnsupportedArchitectureError(
      "FDAT's LDA upsampler (learned deformable attention with its own offset grid) is not supported",
    );
  }
  const unshuffled = dict.has('conv_first.1.weight');
  const first = w.get(unshuffled ? 'conv_first.1.weight' : 'conv_first.weight').shape;
  const embedDim = first[0]!;
  const unshuffle = unshuffled ? Math.round(Math.sqrt(first[1]! / outChannels)) : 1;
  if (unshuffle * unshuffle * outChannels !== first[1] || 4 % unshuffle !== 0) {
    throw new UnsupportedArchitectureError(`FDAT conv_first has ${first[1]} inputs: not an unshuffled image`);
  }
  const inChannels = unshuffled ? outChannels : first[1]!;
  const upscale = unshuffled ? 4 : metaScale;
  const bias = w.get(`${BLOCK0}.attn.bias`).shape;
  const window = Math.round(Math.sqrt(bias[1]!));
  const heads = bias[0]!;
  if (window * window !== bias[1] || bias[2] !== bias[1] || embedDim % heads !== 0) {
    throw new UnsupportedArchitectureError(`FDAT attention bias [${bias.join(', ')}] is not heads × ws² × ws²`);
  }
  const numGroups = w.seqLen('groups');
  const blocksPerGroup = w.seqLen('groups.0.blocks');
  for (let gi = 0; gi < numGroups; gi++)
    for (let b = 0; b < blocksPerGroup; b++) {
      const pre = `groups.${gi}.blocks.${b}`;
      w.get(b % 2 === 0 ? `${pre}.attn.bias` : `${pre}.attn.temp`);
    }
  const needsStages = mode === 'pixelshuffle' || mode === 'nearest+conv' || mode === 'pa_up';
  if (upscale !== 1 && needsStages && !stages(upscale)) {
    throw new UnsupportedArchitectureError(`FDAT's ${mode} upsampler has no ×${upscale} form`);
  }
  if (upscale !== 1 && mode === 'conv') {
    // UniUpsampleV3's plain conv keeps the size: such a file's output is not ×scale (the reference's neither).
    throw new UnsupportedArchitectureError(`FDAT's conv upsampler does not upscale, but this file says ×${upscale}`);
  }
  if (upscale !== 1 && mode === 'transpose+conv' && ![2, 3, 4].includes(upscale)) {
    throw new UnsupportedArchitectureError(`FDAT's transpose+conv upsampler has no ×${upscale} form`);
  }
  const variant = SIZES[embedDim] ? (numGroups === 6 && embedDim === 180 ? 'xl' : SIZES[embedDim]!) : 'custom';
  return {
    kind: 'fdat',
    variant,
    inChannels,
    outChannels,
    embedDim,
    numGroups,
    blocksPerGroup,
    heads,
    window,
    ffnHidden: w.get(`${BLOCK0}.ffn.fc1.weight`).shape[0]!,
    qkvBias: dict.has(`${BLOCK0}.attn.qkv.bias`),
    // UniUpsampleV3 builds a plain conv for any mode at 1×.
    upsampler: upscale === 1 ? 'conv' : mode,
    upscale,
    unshuffle,
    scale: upscale / unshuffle,
  };
}

/** A 1×1 conv's [out, in, 1, 1] weight as the [out, in] of a Linear on NHWC maps. */
const asLinear = (t: Tensor): Tensor => ({ shape: [t.shape[0]!, t.shape[1]!], data: t.data });

class FdatGraph extends TokenGraph {
  constructor(
    dict: StateDict,
    readonly spec: FdatSpec,
  ) {
    super('FDAT', dict, 'an FDAT checkpoint');
  }

  /** Conv2d with its bias when the checkpoint has one. */
  convMaybeBias(x: string, prefix: string, group = 1): string {
    return this.conv(x, prefix, this.get, { bias: this.has(`${prefix}.bias`), group });
  }

  /** A depth-wise 3×3 conv (no bias) on an NHWC map. */
  depthwise(x: string, prefix: string, channels: number): string {
    return this.toNhwc(this.conv(this.toNchw(x), prefix, this.get, { bias: false, group: channels }));
  }

  private qkvPart(x: string, pre: string, i: number): string {
    const c = this.spec.embedDim;
    const weight = this.get(`${pre}.qkv.weight`);
    const bias = this.spec.qkvBias ? this.get(`${pre}.qkv.bias`) : null;
    return this.linear(
      x,
      `${pre}.qkv.${'qkv'[i]}`,
      { shape: [c, c], data: weight.data.subarray(i * c * c, (i + 1) * c * c) },
      bias ? { shape: [c], data: bias.data.subarray(i * c, (i + 1) * c) } : null,
    );
  }

  /** Window attention of NHWC `x`: zero-padded to the window, windows attended with the learned bias, cropped. */
  spatialAttention(x: string, pre: string): string {
    const { window: ws, embedDim: c } = this.spec;
    const padded = this.padNhwc(x, ws);
    const windows = this.rectWindowPartition(padded, ws, ws, c);
    const out = this.windowAttention(
      windows,
      pre,
      {
        qkvWeight: this.get(`${pre}.qkv.weight`),
        qkvBias: this.spec.qkvBias ? this.get(`${pre}.qkv.bias`) : null,
        projWeight: this.get(`${pre}.proj.weight`),
        projBias: this.has(`${pre}.proj.bias`) ? this.get(`${pre}.proj.bias`) : null,
        heads: this.spec.heads,
      },
      this.weightOf(`${pre}.bias`),
      null,
    );
    return this.cropNhwc(this.rectWindowReverse(out, ws, ws, c, padded), this.dim(x, 1), this.dim(x, 2));
  }

  /** Channel attention of NHWC `x` over all its tokens: softmax(q̂·k̂ᵀ · temp)·v per head, q̂ and k̂ unit rows. */
  channelAttention(x: string, pre: string): string {
    const { heads, embedDim: c } = this.spec;
    const flat = this.reshape(x, [0, -1, c]);
    // [B, N, C] → [B, heads, d, N]
    const split = (i: number) =>
      this.transpose(this.reshape(this.qkvPart(flat, pre, i), [0, 0, heads, c / heads]), [0, 2, 3, 1]);
    // F.normalize: x / max(‖x‖₂, 1e-12) along the tokens.
    const unit = (v: string) =>
      this.node('Div', [
        v,
        this.node('Max', [
          this.node('ReduceL2', [v], { axes: attr.ints([-1]), keepdims: attr.int(1) }),
          this.scalar(1e-12),
        ]),
      ]);
    const q = unit(split(0));
    const k = unit(split(1));
    const scores = this.mul(this.node('MatMul', [q, this.transpose(k, [0, 1, 3, 2])]), this.weightOf(`${pre}.temp`));
    const attn = this.node('Softmax', [scores], { axis: attr.int(-1) });
    const out = this.node('MatMul', [attn, split(2)]); // [B, heads, d, N]
    const tokens = this.reshape(this.transpose(out, [0, 3, 1, 2]), this.shape(x, 0, 4));
    return this.dense(tokens, `${pre}.proj`);
  }

  block(x: string, pre: string, spatial: boolean): string {
    const c = this.spec.embedDim;
    const n1 = this.norm(x, `${pre}.n1`);
    const attn = spatial ? this.spatialAttention(n1, `${pre}.attn`) : this.channelAttention(n1, `${pre}.attn`);
    const conv = this.gelu(this.depthwise(n1, `${pre}.conv.0`, c));
    let fused: string;
    if (spatial) {
      // The conv branch's channel gate (pooled over the whole map) scales the attention.
      const pooled = this.node('ReduceMean', [conv], { axes: attr.ints([1, 2]), keepdims: attr.int(1) });
      const squeeze = this.gelu(
        this.linear(pooled, `${pre}.inter.cg.1`, asLinear(this.get(`${pre}.inter.cg.1.weight`)), null),
      );
      const gate = this.sigmoid(
        this.linear(squeeze, `${pre}.inter.cg.3`, asLinear(this.get(`${pre}.inter.cg.3.weight`)), null),
      );
      fused = this.add(this.mul(attn, gate), conv);
    } else {
      // The attention's spatial gate (a 1×1 conv to one channel) scales the conv branch.
      const gate = this.sigmoid(
        this.linear(attn, `${pre}.inter.sg.0`, asLinear(this.get(`${pre}.inter.sg.0.weight`)), null),
      );
      fused = this.add(attn, this.mul(conv, gate));
    }
    const y = this.add(x, fused);
    const hidden = this.gelu(this.dense(this.norm(y, `${pre}.n2`), `${pre}.ffn.fc1`));
    return this.add(y, this.dense(this.depthwise(hidden, `${pre}.ffn.smix`, this.spec.ffnHidden), `${pre}.ffn.fc2`));
  }

  group(x: string, gi: number): string {
    let t = this.toNhwc(x);
    for (let b = 0; b < this.spec.blocksPerGroup; b++) t = this.block(t, `groups.${gi}.blocks.${b}`, b % 2 === 0);
    return this.add(this.conv(this.toNchw(t), `groups.${gi}.conv`, this.get, { bias: false }), x);
  }

  private shuffle(x: string, r: number): string {
    return pixelShuffle(this.g, x, r);
  }

  private convTranspose(x: string, prefix: string, kernel: number, stride: number, pad: number): string {
    return this.node('ConvTranspose', [x, this.weightOf(`${prefix}.weight`), this.weightOf(`${prefix}.bias`)], {
      kernel_shape: attr.ints([kernel, kernel]),
      strides: attr.ints([stride, stride]),
      pads: attr.ints([pad, pad, pad, pad]),
    });
  }

  /** UniUpsampleV3 on NCHW features: its nn.Sequential indices are the keys' `upsampler.N`. */
  upsample(x: string, dict: StateDict): string {
    const s = this.spec.upscale;
    const conv = (v: string, i: number) => this.convMaybeBias(v, `upsampler.${i}`);
    switch (this.spec.upsampler) {
      case 'conv':
        return conv(x, 0);
      case 'pixelshuffledirect':
        return this.shuffle(conv(x, 0), s);
      case 'pixelshuffle': {
        // nn.LeakyReLU() after the first conv: torch's default slope.
        let y = this.leakyRelu(conv(x, 0), 0.01);
        let i = 2;
        for (const r of stages(s)!) {
          y = this.shuffle(conv(y, i), r);
          i += 2;
        }
        return conv(y, i);
      }
      case 'nearest+conv': {
        let y = x;
        let i = 0;
        for (const r of stages(s)!) {
          y = this.leakyRelu(this.g.resizeNearest(conv(y, i), r, r), 0.2);
          i += 3;
        }
        return conv(this.leakyRelu(conv(y, i), 0.2), i + 2);
      }
      case 'dysample': {
        // A 3×3 conv to mid_dim (and LeakyReLU) first when mid_dim differs from the embedding.
        const pre = this.has('upsampler.0.weight') ? 2 : 0;
        const y = pre ? this.leakyRelu(conv(x, 0), 0.01) : x;
        const channels = this.get(`upsampler.${pre}.offset.weight`).shape[1]!;
        return dySample(this.g, new Weights(dict, ARCH), y, `upsampler.${pre}`, { channels, scale: s });
      }
      case 'transpose+conv': {
        if (s === 2) return conv(this.convTranspose(x, 'upsampler.0', 4, 2, 1), 1);
        if (s === 3) return conv(this.convTranspose(x, 'upsampler.0', 3, 3, 0), 1);
        const y = this.gelu(this.convTranspose(x, 'upsampler.0', 4, 2, 1));
        return conv(this.convTranspose(y, 'upsampler.2', 4, 2, 1), 3);
      }
      case 'pa_up': {
        let y = x;
        let i = 0;
        for (const r of stages(s)!) {
          const c = conv(this.g.resizeNearest(y, r, r), i + 1);
          // PA: the features times a sigmoid 1×1 conv of themselves.
          const pa = this.mul(c, this.sigmoid(this.convMaybeBias(c, `upsampler.${i + 2}.conv.0`)));
          y = this.leakyRelu(conv(this.leakyRelu(pa, 0.2), i + 4), 0.2);
          i += 6;
        }
        return conv(y, i);
      }
    }
  }
}

export function buildFdatOnnx(spec: FdatSpec, dict: StateDict, opts: { rgbPorts?: boolean } = {}): Uint8Array {
  const t = new FdatGraph(dict, spec);
  const ports = imagePorts(t.g, spec, opts.rgbPorts ?? false);
  let x = ports.input;
  let crop: { h: string; w: string } | null = null;
  if (spec.unshuffle > 1) {
    const padded = t.reflectPadToMultiple(x, spec.unshuffle);
    crop = { h: padded.h, w: padded.w };
    x = t.convMaybeBias(pixelUnshuffle(t.g, padded.x, spec.unshuffle, spec.inChannels), 'conv_first.1');
  } else {
    x = t.convMaybeBias(x, 'conv_first');
  }
  let deep = x;
  for (let gi = 0; gi < spec.numGroups; gi++) deep = t.group(deep, gi);
  deep = t.conv(deep, 'conv_after', t.get, { bias: false });
  let out = t.upsample(t.add(deep, x), dict);
  if (crop) out = t.cropToScaled(out, crop.h, crop.w, spec.scale);
  return finishModel(t.g, ports, out, spec);
}

/** Multiply-adds per input pixel, counted from the layers (graph/transformerCost.ts relative). */
function fdatMacs(s: FdatSpec): number {
  const e = s.embedDim;
  const d = e / s.heads;
  const perBlock = 4 * e * e + 2 * e * s.ffnHidden + 9 * e + 9 * s.ffnHidden;
  const attention = (i: number) => (i % 2 === 0 ? 2 * s.window * s.window * e : 2 * d * e);
  let macs = 9 * s.inChannels * e + 9 * e * e * (s.numGroups + 1);
  for (let b = 0; b < s.blocksPerGroup; b++) macs += s.numGroups * (perBlock + attention(b));
  // The tails work at up to the output resolution: about 9 · e · out per output pixel at most.
  return macs + 9 * e * Math.max(s.outChannels, 16) * s.upscale * s.upscale;
}

export const fdat: Architecture<FdatSpec> = {
  kind: 'fdat',
  name: 'FDAT',
  // Not in OpenModelDB's 2026-08 data yet (traiNNer-redux's newest).
  openModelDb: [],
  detect: (dict) => (looksLikeFdat(dict) ? detectFdat(dict) : undefined),
  describe: (s) =>
    `FDAT${s.variant === 'custom' ? '' : `-${s.variant}`} x${s.scale} (${s.embedDim} dim, ${s.numGroups}×${s.blocksPerGroup} blocks, window ${s.window}, ${s.upsampler}${s.unshuffle > 1 ? `, unshuffle ${s.unshuffle}` : ''}${channelsNote(s)})`,
  // The window attention pads inside, so any tile runs; window multiples waste nothing.
  tiling: (s) => ({
    window: s.window,
    minSide: 1,
    relativeCost: relative(fdatMacs(s), s.numGroups * s.blocksPerGroup),
  }),
  build: (spec, dict, opts) => buildFdatOnnx(spec, dict, opts),
};
