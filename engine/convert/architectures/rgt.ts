/**
 * RGT — Recursive Generalization Transformer (Chen et al., ICLR 2024; zhengchen1999/RGT, Apache-2.0): detection
 * of RGT and RGT-S checkpoints from their keys and shapes, and the ONNX graph.
 *
 * Residual groups of blocks that alternate
 * - even index, L-SA: DAT's rectangle-window spatial attention (graph/rectWindowAttention.ts: two branches of
 *   H_sp×W_sp and W_sp×H_sp windows, dynamic position bias, DAT's shift pattern, padding inside the attention),
 *   plus a depth-wise 3×3 conv of v, then proj;
 * - odd index, RG-SA: queries from every token attend to keys and values of a recursively reduced map (a
 *   depth-wise 4×4 stride-4 conv applied twice, a depth-wise 3×3, a 1×1 to C·c_ratio channels, LayerNorm, GELU),
 *   with a depth-wise conv position encoding added to v;
 * each followed by the gated MLP (DAT's SGFN), and every block adds its own input scaled by `gamma` (HAI). Then
 * LayerNorm, the residual conv, and the classical pixel-shuffle tail; the DF2K mean is taken off RGB input.
 *
 * The reference chooses the recursion count from the input: max(2, ⌊log₄(side/16)⌋), i.e. 2 for every side of
 * 16 to 1023 pixels, and fails below 16. The graph always reduces twice (Crisp's tiles are far below 1024 pixels,
 * so it equals the reference there) and zero-pads inputs smaller than 16 pixels at the bottom/right to 16 first,
 * cropping the output back (where the reference refuses).
 */
import { UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { RGB_MEAN } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import {
  rectWindowBranches,
  rectWindowShifted,
  spatialGateFfn,
  splitSizeFromRpe,
  type RectWindowMasks,
} from '../graph/rectWindowAttention.js';
import { fitted, resiMacs, tailMacs } from '../graph/transformerCost.js';
import { detectUpsampler, TokenGraph, type ResiConnection } from '../graph/transformerGraph.js';
import { countSeq, denormalizeOutput, normalizeInput } from '../graph/windowAttention.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

export interface RgtSpec {
  kind: 'rgt';
  /** RGT-S: the released small model's 6 groups (RGT has 8). */
  variant: 'RGT' | 'RGT-S';
  inChannels: number;
  outChannels: number;
  embedDim: number;
  depths: number[];
  heads: number[];
  splitSize: [number, number];
  mlpRatio: number;
  /** RG-SA's reduced channels (embedDim × c_ratio). */
  reducedDim: number;
  qkvBias: boolean;
  resiConnection: ResiConnection;
  scale: number;
}

const ARCH = 'RGT';
/** RG-SA's recursion: stride-4 reductions, and the input side below which the reference cannot run. */
const REDUCTIONS = 2;
const MIN_SIDE = 16;

/** RGT's own keys: HAI's gamma and the MLP's gate (DAT has `ffn`, no gamma). */
export function looksLikeRgt(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') &&
    dict.has('before_RG.1.weight') &&
    dict.has('layers.0.blocks.0.gamma') &&
    dict.has('layers.0.blocks.0.mlp.sg.norm.weight')
  );
}

function need(dict: StateDict, key: string): Tensor {
  const t = dict.get(key);
  if (!t) throw new UnsupportedArchitectureError(`not an RGT checkpoint: ${key} is missing`);
  return t;
}

export function detectRgt(dict: StateDict): RgtSpec {
  const [embedDim, inChannels] = need(dict, 'conv_first.weight').shape as [number, number];
  const layers = countSeq(dict, 'layers', 'blocks.0.norm1.weight');
  if (layers === 0) throw new UnsupportedArchitectureError('not an RGT checkpoint: it has no residual groups');
  const depths: number[] = [];
  const heads: number[] = [];
  let reducedDim = 0;
  for (let i = 0; i < layers; i++) {
    const depth = countSeq(dict, `layers.${i}.blocks`, 'norm1.weight');
    if (depth === 0) throw new UnsupportedArchitectureError(`RGT residual group ${i} has no blocks`);
    depths.push(depth);
    // Each L-SA branch has half the heads (spandrel's rule: an odd count when twice the half does not divide C).
    const half = need(dict, `layers.${i}.blocks.0.attn.attns.0.pos.pos3.2.weight`).shape[0]!;
    const h = embedDim % (2 * half) === 0 ? 2 * half : 2 * half + 1;
    if (embedDim % h !== 0 || (embedDim / 2) % half !== 0)
      throw new UnsupportedArchitectureError(`RGT group ${i}: ${h} heads do not divide ${embedDim} channels`);
    heads.push(h);
    if (depth >= 2) {
      const cr = need(dict, `layers.${i}.blocks.1.attn.conv.weight`).shape[0]!;
      if (reducedDim && cr !== reducedDim)
        throw new UnsupportedArchitectureError('RGT groups with different RG-SA widths are not supported');
      if (cr % h !== 0)
        throw new UnsupportedArchitectureError(`RGT group ${i}: ${cr} reduced channels do not fit ${h} heads`);
      reducedDim = cr;
    }
  }
  const splitSize = splitSizeFromRpe(dict, ARCH);
  if (need(dict, 'layers.0.blocks.0.attn.attns.0.pos.pos_proj.weight').shape[0] === 0)
    throw new UnsupportedArchitectureError(`RGT with ${embedDim} channels has an empty position-bias MLP`);
  const up = detectUpsampler(dict, inChannels, ARCH);
  if (up.kind !== 'pixelshuffle')
    throw new UnsupportedArchitectureError(`RGT checkpoint with an unknown reconstruction tail (${up.kind})`);
  return {
    kind: 'rgt',
    variant: layers === 6 ? 'RGT-S' : 'RGT',
    inChannels,
    outChannels: inChannels,
    embedDim,
    depths,
    heads,
    splitSize,
    mlpRatio: need(dict, 'layers.0.blocks.0.mlp.fc1.weight').shape[0]! / embedDim,
    reducedDim: reducedDim || embedDim / 2,
    qkvBias: dict.has('layers.0.blocks.0.attn.qkv.bias'),
    resiConnection: dict.has('conv_after_body.weight') ? '1conv' : '3conv',
    scale: up.scale,
  };
}

export function describeRgt(s: RgtSpec): string {
  const groups = s.depths.every((d) => d === s.depths[0]) ? `${s.depths.length}×${s.depths[0]}` : s.depths.join('+');
  const heads = s.heads.every((h) => h === s.heads[0]) ? `${s.heads[0]}` : s.heads.join('/');
  return `${s.variant} x${s.scale} (${s.embedDim} dim, ${groups} blocks, ${heads} heads, window ${s.splitSize[0]}×${s.splitSize[1]}, mlp ×${s.mlpRatio}, ${s.resiConnection}${s.inChannels !== 3 ? `, ${s.inChannels} channels` : ''})`;
}

export function buildRgtOnnx(spec: RgtSpec, dict: StateDict): Uint8Array {
  const C = spec.embedDim;
  // L-SA's qkv weights are reordered per branch (rectWindowBranches); everything else is read as stored.
  const weights: StateDict = new Map(dict);
  const G = new TokenGraph('RGT', weights, 'an RGT checkpoint');
  const masks: RectWindowMasks = [undefined, undefined];

  const lsa = (x: string, p: string, heads: number, shifted: boolean): string => {
    const { attended, v } = rectWindowBranches(G, weights, dict, x, p, {
      embedDim: C,
      heads,
      splitSize: spec.splitSize,
      shifted,
      masks,
      arch: ARCH,
    });
    const local = G.toNhwc(G.conv(G.toNchw(v), `${p}.get_v`, G.get, { group: C }));
    return G.dense(G.add(attended, local), `${p}.proj`);
  };

  const rgsa = (x: string, p: string, heads: number): string => {
    const cr = spec.reducedDim;
    // Recursive generalisation: the same depth-wise 4×4 stride-4 conv twice, then dwconv, 1×1, LayerNorm, GELU.
    const rw = G.get(`${p}.reduction1.weight`);
    let r = G.toNchw(x);
    for (let i = 0; i < REDUCTIONS; i++)
      r = G.g.conv(r, G.weightOf(`${p}.reduction1.weight`), G.weightOf(`${p}.reduction1.bias`), [4, 4], [0, 0, 0, 0], {
        strides: [4, 4],
        group: rw.shape[0]!,
      });
    const reduced = G.toNhwc(G.conv(G.conv(r, `${p}.dwconv`, G.get, { group: C }), `${p}.conv`, G.get));
    const tokens = G.reshape(G.gelu(G.norm(reduced, `${p}.norm_act.0`)), [0, -1, cr]); // [B, N', cr]
    const q = G.transpose(G.reshape(G.dense(x, `${p}.q`), [0, -1, heads, cr / heads]), [0, 2, 1, 3]);
    const kT = G.transpose(G.reshape(G.dense(tokens, `${p}.k`), [0, -1, heads, cr / heads]), [0, 2, 3, 1]);
    // v [B, N', C] plus its conv position encoding on the reduced map, then per head [B, heads, N', C/heads].
    const vTokens = G.dense(tokens, `${p}.v`);
    const vMap = G.reshape(vTokens, G.concat([G.shape(reduced, 0, 3), G.i64([C])], 0));
    const pe = G.toNhwc(G.conv(G.toNchw(vMap), `${p}.cpe`, G.get, { group: C }));
    const v = G.transpose(
      G.reshape(G.add(vTokens, G.reshape(pe, [0, -1, C])), [0, -1, heads, C / heads]),
      [0, 2, 1, 3],
    );
    const scale = (C / heads) * (cr / C);
    const scores = G.mul(G.node('MatMul', [q, kT]), G.scalar(scale ** -0.5));
    const out = G.node('MatMul', [G.node('Softmax', [scores], { axis: attr.int(-1) }), v]);
    return G.dense(G.reshape(G.transpose(out, [0, 2, 1, 3]), G.node('Shape', [x])), `${p}.proj`);
  };

  const mean = spec.inChannels === 3 ? RGB_MEAN : null;
  // Sides below 16 cannot be reduced twice: zero-pad them to 16 (bottom/right) and crop the output back.
  const hw = G.shape('input', 2, 4);
  const grow = G.node('Max', [G.node('Sub', [G.i64([MIN_SIDE, MIN_SIDE]), hw]), G.i64([0, 0])]);
  const input = G.node('Pad', ['input', G.concat([G.i64([0, 0, 0, 0, 0, 0]), grow], 0)], {
    mode: attr.string('constant'),
  });
  const shallow = G.conv(normalizeInput(G, input, mean, 1), 'conv_first', G.get);
  let t = G.norm(G.toNhwc(shallow), 'before_RG.1');
  spec.depths.forEach((depth, i) => {
    const res = t;
    for (let j = 0; j < depth; j++) {
      const p = `layers.${i}.blocks.${j}`;
      const blockIn = t;
      const y = G.norm(t, `${p}.norm1`);
      const a =
        j % 2 === 0
          ? lsa(y, `${p}.attn`, spec.heads[i]!, rectWindowShifted(i, j))
          : rgsa(y, `${p}.attn`, spec.heads[i]!);
      t = G.add(t, a);
      t = G.add(t, spatialGateFfn(G, G.norm(t, `${p}.norm2`), `${p}.mlp`));
      t = G.add(t, G.mul(blockIn, G.weightOf(`${p}.gamma`)));
    }
    t = G.add(res, G.toNhwc(G.resiConv(G.toNchw(t), `layers.${i}.conv`, spec.resiConnection)));
  });
  const deep = G.resiConv(G.toNchw(G.norm(t, 'norm')), 'conv_after_body', spec.resiConnection);
  const out = denormalizeOutput(G, G.upsampleTail(G.add(deep, shallow), 'pixelshuffle', spec.scale), mean, 1);
  G.cropToScaled(out, G.shape('input', 2, 3), G.shape('input', 3, 4), spec.scale, 'output');
  return G.g.toBytes({
    inChannels: spec.inChannels,
    outChannels: spec.outChannels,
    producer: 'crisp-convert (RGT)',
    doc: JSON.stringify(spec),
  });
}

/**
 * Multiply-adds per input pixel from the layers: L-SA as a Swin block over the window's keys plus its
 * depth-wise conv, RG-SA with keys from a 16× smaller map (a few per pixel), the gated MLP, the residual convs
 * and the tail. Over SRVGGNetCompact's (graph/transformerCost.ts) they give RGT-S ×4 9.9×; it measured 10.3×
 * (120 s per 256² tile against the compact model's 11.6 s, `CRISP_BENCH_ARCH=RGT-S npm run bench -- --only arch`,
 * 2026-11-27, load ~12), so the planner's cost is the multiply-add ratio × 1.04.
 */
const RGT_FIT = { macs: 1.04, perScore: 0 };

function rgtMacs(s: RgtSpec): number {
  const e = s.embedDim;
  const hidden = e * s.mlpRatio;
  const mlp = e * hidden + 9 * (hidden / 2) + (hidden / 2) * e;
  const keys = s.splitSize[0] * s.splitSize[1];
  const lsa = 4 * e * e + 2 * keys * e + 9 * e;
  const rgsa = e * s.reducedDim + 2 * e * e + 9 * e;
  let macs = 9 * s.inChannels * e + (s.depths.length + 1) * resiMacs(e, s.resiConnection);
  for (const d of s.depths) for (let j = 0; j < d; j++) macs += mlp + (j % 2 === 0 ? lsa : rgsa);
  return macs + tailMacs(e, { upsampler: 'pixelshuffle', scale: s.scale, outChannels: s.outChannels });
}

export const rgt: Architecture<RgtSpec> = {
  kind: 'rgt',
  name: 'RGT',
  openModelDb: ['rgt'],
  detect: (dict) => (looksLikeRgt(dict) ? detectRgt(dict) : undefined),
  describe: describeRgt,
  // L-SA pads inside to the longer window side; RG-SA needs 16 pixels (smaller inputs are padded in the graph).
  tiling: (s) => ({
    window: Math.max(...s.splitSize),
    minSide: MIN_SIDE,
    relativeCost: fitted(rgtMacs(s), 0, RGT_FIT),
  }),
  build: (spec, dict) => buildRgtOnnx(spec, dict),
};
