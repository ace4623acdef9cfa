/**
 * RealPLKSR (Partial Large Kernel CNNs for Efficient Super-Resolution, Lee et al. 2024; the "Real" variant of
 * neosr / dslisleedh): detection from a state dict and the ONNX graph, with either a PixelShuffle or a
 * DySample upsampler (Liu et al. 2023, "Learning to Upsample by Learning to Sample").
 *
 * Block: [channel LayerNorm] → conv3 → Mish → conv3 → large-kernel conv on the first `partialDim` channels →
 * element-wise attention (x · σ(conv3 x)) → 1×1 refine → [GroupNorm(4)] + skip. The network adds the input
 * repeated scale² times per channel before the upsampler (for PixelShuffle, a nearest upscale of the input).
 * DySample is graph/dySample.ts (shared with MoSR).
 */
import {
  channelsNote,
  cnnTiling,
  UnsupportedArchitectureError,
  type Architecture,
  type BuildOptions,
} from './architecture.js';
import { dySample, dySampleGroups } from '../graph/dySample.js';
import {
  attr,
  channelLayerNorm,
  convFrom,
  convWith,
  GraphBuilder,
  groupNorm,
  imagePorts,
  int64Const,
  mish,
  pixelShuffle,
  scaleAndChannels,
  Weights,
  finishModel,
} from '../graph/graphOps.js';
import type { StateDict } from '../checkpoint/stateDict.js';

/** RealPLKSR (partial large-kernel CNN), with a PixelShuffle or a DySample upsampler. */
export interface RealPlksrSpec {
  kind: 'realplksr';
  inChannels: number;
  outChannels: number;
  dim: number;
  numBlocks: number;
  kernelSize: number;
  /** Channels the large kernel convolves (dim × split ratio). */
  partialDim: number;
  useEa: boolean;
  layerNorm: boolean;
  dysample: boolean;
  scale: number;
}

/** RealPLKSR's GroupNorm group count (fixed by the architecture; not recorded in checkpoints). */
const NORM_GROUPS = 4;

export function looksLikeRealPlksr(dict: StateDict): boolean {
  return dict.has('feats.0.weight') && dict.has('feats.1.lk.conv.weight') && dict.has('feats.1.channel_mixer.0.weight');
}

export function detectRealPlksr(dict: StateDict): RealPlksrSpec {
  const w = new Weights(dict, 'RealPLKSR');
  const first = w.get('feats.0.weight').shape;
  const dim = first[0]!;
  const inChannels = first[1]!;
  const total = w.seqLen('feats');
  // feats = conv, blocks…, Dropout2d (no weights), conv.
  const numBlocks = total - 3;
  if (numBlocks < 1 || !dict.has(`feats.${total - 1}.weight`) || dict.has(`feats.${total - 2}.weight`)) {
    throw new UnsupportedArchitectureError(`RealPLKSR feats has an unexpected layout (${total} entries)`);
  }
  const lastOut = w.get(`feats.${total - 1}.weight`).shape[0]!;
  const sc = scaleAndChannels(lastOut, inChannels);
  if (!sc || sc.outChannels !== inChannels) {
    throw new UnsupportedArchitectureError(`RealPLKSR last conv has ${lastOut} outputs: not ${inChannels}×scale²`);
  }
  const lk = w.get('feats.1.lk.conv.weight').shape;
  const dysample = dict.has('to_img.init_pos');
  if (dysample) {
    dySampleGroups(w, 'to_img', { channels: inChannels * sc.scale * sc.scale, scale: sc.scale });
    w.get('to_img.scope.weight');
  }
  return {
    kind: 'realplksr',
    inChannels,
    outChannels: inChannels,
    dim,
    numBlocks,
    kernelSize: lk[2]!,
    partialDim: lk[0]!,
    useEa: dict.has('feats.1.attn.f.0.weight'),
    layerNorm: dict.has('feats.1.layer_norm.weight'),
    dysample,
    scale: sc.scale,
  };
}

/** A 1×1 conv that repeats each input channel `r` times in place (torch.repeat_interleave on dim 1): exact. */
function repeatInterleave(g: GraphBuilder, x: string, channels: number, r: number): string {
  const data = new Float32Array(channels * r * channels);
  for (let c = 0; c < channels; c++) for (let k = 0; k < r; k++) data[(c * r + k) * channels + c] = 1;
  return convWith(g, x, `repeat_interleave_${r}`, { shape: [channels * r, channels, 1, 1], data }, null);
}

export function buildRealPlksrOnnx(spec: RealPlksrSpec, dict: StateDict, opts: BuildOptions = {}): Uint8Array {
  const w = new Weights(dict, 'RealPLKSR');
  const g = new GraphBuilder('RealPLKSR');
  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  const input = ports.input;
  let x = convFrom(g, w, input, 'feats.0');
  const p = spec.partialDim;
  for (let b = 1; b <= spec.numBlocks; b++) {
    const pre = `feats.${b}`;
    const skip = x;
    let y = spec.layerNorm ? channelLayerNorm(g, w, x, `${pre}.layer_norm`, 1e-6) : x;
    y = convFrom(g, w, mish(g, convFrom(g, w, y, `${pre}.channel_mixer.0`)), `${pre}.channel_mixer.2`);
    if (p >= spec.dim) {
      y = convFrom(g, w, y, `${pre}.lk.conv`);
    } else {
      const head = g.node('Slice', [y, int64Const(g, [0]), int64Const(g, [p]), int64Const(g, [1])]);
      const tail = g.node('Slice', [y, int64Const(g, [p]), int64Const(g, [spec.dim]), int64Const(g, [1])]);
      y = g.node('Concat', [convFrom(g, w, head, `${pre}.lk.conv`), tail], { axis: attr.int(1) });
    }
    if (spec.useEa) y = g.node('Mul', [y, g.node('Sigmoid', [convFrom(g, w, y, `${pre}.attn.f.0`)])]);
    y = convFrom(g, w, y, `${pre}.refine`);
    if (!spec.layerNorm) y = groupNorm(g, w, y, `${pre}.norm`, NORM_GROUPS);
    x = g.node('Add', [y, skip]);
  }
  const last = `feats.${spec.numBlocks + 2}`;
  const s = spec.scale;
  const feats = convFrom(g, w, x, last);
  if (spec.dysample) {
    const base = s === 1 ? input : repeatInterleave(g, input, spec.inChannels, s * s);
    const sampled = dySample(g, w, g.node('Add', [feats, base]), 'to_img', {
      channels: spec.inChannels * s * s,
      scale: s,
    });
    return finishModel(g, ports, sampled, spec);
  }
  // PixelShuffle(feats + repeat_interleave(x)) = PixelShuffle(feats) + nearest ×s of x.
  const up = pixelShuffle(g, feats, s);
  return finishModel(g, ports, g.node('Add', [up, s === 1 ? input : g.resizeNearest(input, s, s)]), spec);
}

export const realplksr: Architecture<RealPlksrSpec> = {
  kind: 'realplksr',
  name: 'RealPLKSR',
  openModelDb: ['realplksr', 'realplksr-dysample'],
  detect: (dict) => (looksLikeRealPlksr(dict) ? detectRealPlksr(dict) : undefined),
  describe: (s) =>
    `RealPLKSR x${s.scale} (${s.dim} dim, ${s.numBlocks} blocks, kernel ${s.kernelSize}, ${s.dysample ? 'DySample' : 'PixelShuffle'}${s.layerNorm ? ', LayerNorm' : ''}${s.useEa ? '' : ', no EA'}${channelsNote(s)})`,
  tiling: (s) => cnnTiling(s.dysample ? 6.7 : 6.3),
  build: (spec, dict, opts) => buildRealPlksrOnnx(spec, dict, opts),
};
