/**
 * DAT — Dual Aggregation Transformer (Chen et al., ICCV 2023; zhengchen1999/DAT, Apache-2.0): detection of
 * DAT, DAT-S, DAT-2 and DAT-light checkpoints from their keys and shapes, and the ONNX graph.
 *
 * Residual groups of blocks that alternate (even index) adaptive spatial attention and (odd) adaptive
 * channel attention, each followed by the spatial-gate FFN (SGFN):
 * - spatial: qkv split into two halves of the channels, attended in H_sp×W_sp and W_sp×H_sp rectangle
 *   windows with a dynamic position bias (a small MLP of the relative offsets: a constant of the weights,
 *   computed here at conversion), shifted by half a window in a fixed pattern of blocks; before windowing,
 *   q, k and v are zero-padded to a multiple of the larger window side (inside the attention, so padded
 *   tokens take part in the softmax exactly as in PyTorch) and the output cropped back.
 * - channel: transposed (XCiT) attention over L2-normalised q and k with a learned temperature per head.
 * - both fuse a depth-wise conv branch on v through the adaptive interaction module (sigmoid channel and
 *   spatial maps crossing the two branches). BatchNorms are folded into the convs.
 */
import { UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { RGB_MEAN } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { fitted, resiMacs, tailMacs } from '../graph/transformerCost.js';
import { detectUpsampler, TokenGraph, type ResiConnection, type UpsamplerKind } from '../graph/transformerGraph.js';
import {
  rectWindowBranches,
  rectWindowShifted,
  spatialGateFfn,
  splitSizeFromRpe,
  type RectWindowMasks,
} from '../graph/rectWindowAttention.js';
import { countSeq, denormalizeOutput, normalizeInput } from '../graph/windowAttention.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

export type DatVariant = 'DAT' | 'DAT-S' | 'DAT-2' | 'DAT-light';

export interface DatSpec {
  kind: 'dat';
  variant: DatVariant;
  inChannels: number;
  outChannels: number;
  embedDim: number;
  depths: number[];
  heads: number[];
  splitSize: [number, number];
  expansion: number;
  qkvBias: boolean;
  upsampler: Exclude<UpsamplerKind, 'nearest+conv' | 'none'>;
  resiConnection: ResiConnection;
  scale: number;
}

const ARCH = 'DAT';

/** DAT's own keys: the LayerNorm before the groups and SGFN's spatial gate (RGT, its sibling, has an Mlp). */
export function looksLikeDat(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') && dict.has('before_RG.1.weight') && dict.has('layers.0.blocks.0.ffn.sg.norm.weight')
  );
}

function need(dict: StateDict, key: string): Tensor {
  const t = dict.get(key);
  if (!t) throw new UnsupportedArchitectureError(`not a DAT checkpoint: ${key} is missing`);
  return t;
}

function variantOf(s: Omit<DatSpec, 'variant' | 'kind'>): DatVariant {
  if (s.upsampler === 'pixelshuffledirect' || s.depths.length < 4) return 'DAT-light';
  if (s.splitSize[0] === 8 && s.splitSize[1] === 16) return 'DAT-S';
  return s.expansion <= 2 ? 'DAT-2' : 'DAT';
}

export function detectDat(dict: StateDict): DatSpec {
  const first = need(dict, 'conv_first.weight');
  const [embedDim, inChannels] = first.shape as [number, number];
  const layers = countSeq(dict, 'layers', 'blocks.0.norm1.weight');
  if (layers === 0) throw new UnsupportedArchitectureError('not a DAT checkpoint: it has no residual groups');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    const depth = countSeq(dict, `layers.${i}.blocks`, 'norm1.weight');
    if (depth === 0) throw new UnsupportedArchitectureError(`DAT residual group ${i} has no blocks`);
    depths.push(depth);
    // The channel-attention block (index 1) carries one temperature per head; the spatial one has half the
    // heads in each of its two branches.
    heads.push(
      depth >= 2
        ? need(dict, `layers.${i}.blocks.1.attn.temperature`).shape[0]!
        : need(dict, `layers.${i}.blocks.0.attn.attns.0.pos.pos3.2.weight`).shape[0]! * 2,
    );
  }
  const splitSize = splitSizeFromRpe(dict, ARCH);
  for (const [i, h] of heads.entries()) {
    if (h < 2 || h % 2 !== 0 || embedDim % h !== 0)
      throw new UnsupportedArchitectureError(
        `DAT group ${i}: ${h} heads do not divide ${embedDim} channels in two branches`,
      );
  }
  // The position-bias MLP is (C/2)/16 wide: below 32 channels it has no width (no released model is that narrow).
  if (need(dict, 'layers.0.blocks.0.attn.attns.0.pos.pos_proj.weight').shape[0] === 0)
    throw new UnsupportedArchitectureError(`DAT with ${embedDim} channels has an empty position-bias MLP`);
  const up = detectUpsampler(dict, inChannels, ARCH);
  if (up.kind !== 'pixelshuffle' && up.kind !== 'pixelshuffledirect')
    throw new UnsupportedArchitectureError(`DAT checkpoint with an unknown reconstruction tail (${up.kind})`);
  const base = {
    inChannels,
    outChannels: inChannels,
    embedDim,
    depths,
    heads,
    splitSize,
    expansion: need(dict, 'layers.0.blocks.0.ffn.fc1.weight').shape[0]! / embedDim,
    qkvBias: dict.has('layers.0.blocks.0.attn.qkv.bias'),
    upsampler: up.kind,
    resiConnection: (dict.has('conv_after_body.weight') ? '1conv' : '3conv') as ResiConnection,
    scale: up.scale,
  };
  return { kind: 'dat', variant: variantOf(base), ...base };
}

export function describeDat(s: DatSpec): string {
  const groups = s.depths.every((d) => d === s.depths[0]) ? `${s.depths.length}×${s.depths[0]}` : s.depths.join('+');
  const heads = s.heads.every((h) => h === s.heads[0]) ? `${s.heads[0]}` : s.heads.join('/');
  return `${s.variant} x${s.scale} (${s.embedDim} dim, ${groups} blocks, ${heads} heads, window ${s.splitSize[0]}×${s.splitSize[1]}, ffn ×${s.expansion}, ${s.upsampler}, ${s.resiConnection}${s.inChannels !== 3 ? `, ${s.inChannels} channels` : ''})`;
}

/** Blocks whose spatial attention is shifted: DAT's fixed pattern over group and block index (RGT's too). */
export const datShifted = rectWindowShifted;

export function buildDatOnnx(dict: StateDict, given?: DatSpec): { onnx: Uint8Array; spec: DatSpec } {
  const spec = given ?? detectDat(dict);
  const C = spec.embedDim;
  // The spatial blocks' qkv weights are reordered per branch (below); everything else is read as stored.
  const weights: StateDict = new Map(dict);
  const G = new TokenGraph('DAT', weights, 'a DAT checkpoint');

  /** Depth-wise conv branch + adaptive interaction module, for both attention kinds; returns proj(…). */
  const aim = (p: string, att: string, v: string, spatialAttention: boolean): string => {
    const convX = G.toNhwc(G.gelu(G.convBn(G.toNchw(v), `${p}.dwconv.0`, `${p}.dwconv.1`, C)));
    const channelMap = (src: string) => {
      const pooled = G.node('ReduceMean', [src], { axes: attr.ints([1, 2]), keepdims: attr.int(1) });
      const hidden = G.gelu(G.pointwise(pooled, `${p}.channel_interaction.1`, `${p}.channel_interaction.2`));
      return G.pointwise(hidden, `${p}.channel_interaction.4`);
    };
    const spatialMap = (src: string) =>
      G.pointwise(
        G.gelu(G.pointwise(src, `${p}.spatial_interaction.0`, `${p}.spatial_interaction.1`)),
        `${p}.spatial_interaction.3`,
      );
    // Spatial blocks take the channel map from the conv branch and the spatial map from attention; channel
    // blocks cross the other way.
    const fused = spatialAttention
      ? G.add(G.mul(att, G.sigmoid(channelMap(convX))), G.mul(convX, G.sigmoid(spatialMap(att))))
      : G.add(G.mul(att, G.sigmoid(spatialMap(convX))), G.mul(convX, G.sigmoid(channelMap(att))));
    return G.dense(fused, `${p}.proj`);
  };

  // Shifted-window masks depend only on the padded size, which every block shares: built once per branch.
  const masks: RectWindowMasks = [undefined, undefined];

  const spatialBlock = (x: string, p: string, heads: number, shifted: boolean): string => {
    const { attended, v } = rectWindowBranches(G, weights, dict, x, p, {
      embedDim: C,
      heads,
      splitSize: spec.splitSize,
      shifted,
      masks,
      arch: ARCH,
    });
    return aim(p, attended, v, true);
  };

  const channelBlock = (x: string, p: string, heads: number): string => {
    const hd = C / heads;
    const [q, k, v] = G.split(G.dense(x, `${p}.qkv`), 3, [C, C, C]);
    // [B, H, W, C] → [B, heads, d, N]: attention runs across channels, each row a channel's whole map.
    const perHead = (t: string) => G.transpose(G.reshape(t, [0, -1, heads, hd]), [0, 2, 3, 1]);
    const normalise = (t: string) =>
      G.node('Div', [
        t,
        G.node('Max', [G.node('ReduceL2', [t], { axes: attr.ints([-1]), keepdims: attr.int(1) }), G.scalar(1e-12)]),
      ]);
    const scores = G.mul(
      G.node('MatMul', [normalise(perHead(q!)), G.transpose(normalise(perHead(k!)), [0, 1, 3, 2])]),
      G.weightOf(`${p}.temperature`),
    );
    const o = G.node('MatMul', [G.node('Softmax', [scores], { axis: attr.int(-1) }), perHead(v!)]);
    const att = G.reshape(G.transpose(o, [0, 3, 1, 2]), G.node('Shape', [x]));
    return aim(p, att, v!, false);
  };

  const mean = spec.inChannels === 3 ? RGB_MEAN : null;
  const shallow = G.conv(normalizeInput(G, 'input', mean, 1), 'conv_first', G.get);
  let t = G.norm(G.toNhwc(shallow), 'before_RG.1');
  spec.depths.forEach((depth, i) => {
    const res = t;
    for (let j = 0; j < depth; j++) {
      const p = `layers.${i}.blocks.${j}`;
      const y = G.norm(t, `${p}.norm1`);
      const a =
        j % 2 === 0
          ? spatialBlock(y, `${p}.attn`, spec.heads[i]!, datShifted(i, j))
          : channelBlock(y, `${p}.attn`, spec.heads[i]!);
      t = G.add(t, a);
      t = G.add(t, spatialGateFfn(G, G.norm(t, `${p}.norm2`), `${p}.ffn`));
    }
    t = G.add(res, G.toNhwc(G.resiConv(G.toNchw(t), `layers.${i}.conv`, spec.resiConnection)));
  });
  const deep = G.resiConv(G.toNchw(G.norm(t, 'norm')), 'conv_after_body', spec.resiConnection);
  const out = denormalizeOutput(G, G.upsampleTail(G.add(deep, shallow), spec.upsampler, spec.scale), mean, 1);
  G.node('Identity', [out], {}, 'output');
  return {
    onnx: G.g.toBytes({
      inChannels: spec.inChannels,
      outChannels: spec.outChannels,
      producer: 'crisp-convert (DAT)',
      doc: JSON.stringify(spec),
    }),
    spec,
  };
}

/**
 * DAT attends over many more keys per token than SwinIR (256 in its 8×32 windows), and the memory-bound work
 * around the score matrix (bias and mask adds, softmax) grows with heads × keys, not with the MACs. The two
 * constants are fitted to the two released sizes measured on a quiet machine (`npm run bench -- --only arch`,
 * compact 2.2 s per 256² tile): DAT-light 1.6× and DAT-2 19×.
 */
const DAT_FIT = { macs: 1.67, perScore: 3.4e-5 };

function datRelativeCost(s: DatSpec): number {
  const e = s.embedDim;
  const n = s.splitSize[0] * s.splitSize[1];
  const hidden = e * s.expansion;
  // SGFN (fc1, gate dwconv, fc2) and the adaptive interaction (dwconv on v, 1×1 to C/16) in every block.
  const ffn = e * hidden + 9 * (hidden / 2) + (hidden / 2) * e;
  const aim = 9 * e + e * Math.floor(e / 16);
  let macs = 9 * s.inChannels * e + (s.depths.length + 1) * resiMacs(e, s.resiConnection) + tailMacs(e, s);
  let scores = 0;
  s.depths.forEach((depth, i) => {
    const heads = s.heads[i]!;
    for (let j = 0; j < depth; j++) {
      // Even blocks: two window branches of C/2 channels over n keys; odd: channel attention (d×d per head).
      macs += 4 * e * e + ffn + aim + (j % 2 === 0 ? 2 * n * e : 2 * e * (e / heads));
      if (j % 2 === 0) scores += heads * n;
    }
  });
  return fitted(macs, scores, DAT_FIT);
}

export const dat: Architecture<DatSpec> = {
  kind: 'dat',
  name: 'DAT',
  openModelDb: ['dat'],
  detect: (dict) => (looksLikeDat(dict) ? detectDat(dict) : undefined),
  describe: describeDat,
  // DAT pads q/k/v inside each attention to its longer window side, so it takes any tile down to 1×1.
  tiling: (s) => ({ window: Math.max(...s.splitSize), minSide: 1, relativeCost: datRelativeCost(s) }),
  build: (spec, dict) => buildDatOnnx(dict, spec).onnx,
};
