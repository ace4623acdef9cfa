/**
 * SRFormer — permuted self-attention (Zhou et al., ICCV 2023; HVision-NKU/SRFormer): detection of SRFormer
 * and SRFormer-light checkpoints (classical ×2/×3/×4, light one-step, real-world nearest+conv ×4 and 1×
 * restoration tails) and the ONNX graph.
 *
 * A SwinIR-shaped network (conv_first, residual groups of blocks with a conv, norm, conv_after_body, tail)
 * whose window attention is "permuted": queries are the ws×ws pixels of a window, while keys and values
 * are compressed to (ws/2)² tokens by moving each 2×2 pixel block into the channels (kv projects to C/2,
 * four neighbours' C/4 slices concatenate to C). The relative position bias is indexed by each query's
 * half-resolution position; shifted blocks (every odd one) mask across the two resolutions. The FFN has a
 * 5×5 depth-wise conv branch. The input is reflect-padded to the window multiple and the output cropped,
 * as SRFormer's own forward does.
 */
import { UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { RGB_MEAN } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { fitted, resiMacs, tailMacs } from '../graph/transformerCost.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';
import { detectUpsampler, TokenGraph, type ResiConnection, type UpsamplerKind } from '../graph/transformerGraph.js';
import { countSeq, denormalizeOutput, normalizeInput } from '../graph/windowAttention.js';

export type SrformerVariant = 'SRFormer' | 'SRFormer-light';

export interface SrformerSpec {
  kind: 'srformer';
  variant: SrformerVariant;
  inChannels: number;
  outChannels: number;
  embedDim: number;
  depths: number[];
  heads: number[];
  windowSize: number;
  mlpRatio: number;
  patchNorm: boolean;
  /** Per group, which blocks attend in shifted windows. */
  shifted: boolean[][];
  upsampler: UpsamplerKind;
  resiConnection: ResiConnection;
  scale: number;
}

const ARCH = 'SRFormer';
const block = (i: number, j: number) => `layers.${i}.residual_group.blocks.${j}`;

export function looksLikeSrformer(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') &&
    dict.has(`${block(0, 0)}.attn.kv.weight`) &&
    dict.has(`${block(0, 0)}.attn.q.weight`) &&
    dict.has(`${block(0, 0)}.attn.relative_position_bias_table`)
  );
}

function need(dict: StateDict, key: string): Tensor {
  const t = dict.get(key);
  if (!t) throw new UnsupportedArchitectureError(`not an SRFormer checkpoint: ${key} is missing`);
  return t;
}

export function detectSrformer(dict: StateDict): SrformerSpec {
  if (dict.has('absolute_pos_embed'))
    throw new UnsupportedArchitectureError(
      'SRFormer with an absolute position embedding (ape) is tied to its training size and is not supported',
    );
  const [embedDim, inChannels] = need(dict, 'conv_first.weight').shape as [number, number];
  const layers = countSeq(dict, 'layers', 'residual_group.blocks.0.norm1.weight');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    depths.push(countSeq(dict, `layers.${i}.residual_group.blocks`, 'norm1.weight'));
    heads.push(need(dict, `${block(i, 0)}.attn.relative_position_bias_table`).shape[1]!);
  }
  if (layers === 0 || depths.includes(0)) throw new UnsupportedArchitectureError('SRFormer checkpoint without blocks');
  const rows = need(dict, `${block(0, 0)}.attn.relative_position_bias_table`).shape[0]!;
  const half = (Math.round(Math.sqrt(rows)) + 1) / 2;
  const windowSize = 2 * half;
  if ((2 * half - 1) ** 2 !== rows || !Number.isInteger(half) || windowSize < 4)
    throw new UnsupportedArchitectureError(
      `SRFormer bias table of ${rows} rows is not a (ws−1)² table of an even window ≥ 4`,
    );
  for (const [i, h] of heads.entries())
    if (embedDim % h !== 0 || embedDim % 4 !== 0)
      throw new UnsupportedArchitectureError(`SRFormer group ${i}: ${h} heads do not divide ${embedDim} channels`);
  // Shifted blocks carry their mask buffer; without any masks in the file, Swin's rule: every odd block.
  const anyMask = [...dict.keys()].some((k) => k.endsWith('.attn_mask'));
  const shifted = depths.map((d, i) =>
    Array.from({ length: d }, (_, j) => (anyMask ? dict.has(`${block(i, j)}.attn_mask`) : j % 2 === 1)),
  );
  const up = detectUpsampler(dict, inChannels, ARCH);
  return {
    kind: 'srformer',
    variant: up.kind === 'pixelshuffledirect' ? 'SRFormer-light' : 'SRFormer',
    inChannels,
    outChannels: inChannels,
    embedDim,
    depths,
    heads,
    windowSize,
    mlpRatio: need(dict, `${block(0, 0)}.mlp.fc1.weight`).shape[0]! / embedDim,
    patchNorm: dict.has('patch_embed.norm.weight'),
    shifted,
    upsampler: up.kind,
    resiConnection: dict.has('conv_after_body.weight') ? '1conv' : '3conv',
    scale: up.scale,
  };
}

export function describeSrformer(s: SrformerSpec): string {
  const groups = s.depths.every((d) => d === s.depths[0]) ? `${s.depths.length}×${s.depths[0]}` : s.depths.join('+');
  const heads = s.heads.every((h) => h === s.heads[0]) ? `${s.heads[0]}` : s.heads.join('/');
  const tail = s.upsampler === 'none' ? 'restoration' : s.upsampler;
  return `${s.variant} x${s.scale} (${s.embedDim} dim, ${groups} blocks, ${heads} heads, window ${s.windowSize}, mlp ×${s.mlpRatio}, ${tail}, ${s.resiConnection}${s.inChannels !== 3 ? `, ${s.inChannels} channels` : ''})`;
}

/**
 * The bias-table index of permuted attention: query pixel (r, c) of the ws×ws window sits at (r/2, c/2) of
 * the half-resolution grid its keys live on, so entry (i, j) is Swin's relative index between that cell and
 * key j (SRFormer's aligned_relative_position_index, recomputed).
 */
export function alignedRelativePositionIndex(ws: number): number[] {
  const pw = ws / 2;
  const n = ws * ws;
  const m = pw * pw;
  const out = new Array<number>(n * m);
  for (let i = 0; i < n; i++) {
    const pr = Math.floor(Math.floor(i / ws) / 2);
    const pc = Math.floor((i % ws) / 2);
    for (let j = 0; j < m; j++)
      out[i * m + j] = (pr - Math.floor(j / pw) + pw - 1) * (2 * pw - 1) + (pc - (j % pw) + pw - 1);
  }
  return out;
}

export function buildSrformerOnnx(dict: StateDict, given?: SrformerSpec): { onnx: Uint8Array; spec: SrformerSpec } {
  const spec = given ?? detectSrformer(dict);
  const C = spec.embedDim;
  const ws = spec.windowSize;
  const pw = ws / 2;
  const n = ws * ws;
  const shift = Math.floor(ws / 2);
  const G = new TokenGraph('SRFormer', dict, 'an SRFormer checkpoint');
  const index = alignedRelativePositionIndex(ws);

  const psa = (y: string, p: string, heads: number, mask: string | null, grid: ReturnType<typeof G.grid>) => {
    const hd = C / heads;
    const win = G.windowPartition(mask ? G.roll(y, -shift) : y, grid);
    // kv: each 2×2 pixel block of a window becomes one token whose channels are the four pixels' C/4 slices.
    const blocks = G.transpose(
      G.reshape(G.dense(win, `${p}.attn.kv`), [-1, pw, 2, pw, 2, 2, C / 4]),
      [0, 1, 3, 5, 2, 4, 6],
    );
    const kv = G.transpose(
      G.reshape(blocks, G.concat([G.shape(win, 0, 2), G.i64([n / 4, 2, heads, hd])], 0)),
      [3, 0, 1, 4, 2, 5],
    );
    const [k, v] = [0, 1].map((i) =>
      G.node('Squeeze', [G.node('Gather', [kv, G.i64([i])], { axis: attr.int(0) }), G.i64([0])]),
    );
    const q = G.splitHeads(G.dense(win, `${p}.attn.q`), heads, C);
    const table = `${p}.attn.relative_position_bias_table`;
    const bias = G.relativePositionBias(table, G.get(table), 'aligned_relative_position_index', index, n, n / 4);
    const o = G.attention(G.mul(q, G.scalar(hd ** -0.5)), G.transpose(k!, [0, 1, 2, 4, 3]), v!, bias, mask);
    const img = G.windowReverse(G.dense(G.mergeHeads(o, C), `${p}.attn.proj`), grid);
    return mask ? G.roll(img, shift) : img;
  };

  const convFfn = (x: string, p: string): string => {
    const hidden = G.get(`${p}.fc1.weight`).shape[0]!;
    const h = G.gelu(G.dense(x, `${p}.fc1`));
    const dw = G.toNhwc(G.gelu(G.conv(G.toNchw(h), `${p}.dwconv.depthwise_conv.0`, G.get, { group: hidden })));
    return G.dense(G.add(h, dw), `${p}.fc2`);
  };

  const mean = spec.inChannels === 3 ? RGB_MEAN : null;
  const padded = G.reflectPadToMultiple('input', ws);
  const x = normalizeInput(G, padded.x, mean, 1);
  const shallow = G.conv(x, 'conv_first', G.get);
  let t = G.toNhwc(shallow);
  if (spec.patchNorm) t = G.norm(t, 'patch_embed.norm');
  const grid = G.grid(t, ws, C);
  // Queries are labelled on the padded map in ws windows, keys on the half-size map in ws/2 windows, each
  // with its own shift (shift//2 for the keys, as SRFormer's calculate_mask does).
  const hp = G.dim(t, 1);
  const wp = G.dim(t, 2);
  const two = G.i64([2]);
  const mask = spec.shifted.some((s) => s.includes(true))
    ? G.labelMask(
        G.windowLabels(hp, wp, ws, ws, shift, shift),
        G.windowLabels(
          G.node('Div', [hp, two]),
          G.node('Div', [wp, two]),
          pw,
          pw,
          Math.floor(shift / 2),
          Math.floor(shift / 2),
        ),
      )
    : null;
  spec.depths.forEach((depth, i) => {
    const res = t;
    for (let j = 0; j < depth; j++) {
      const p = block(i, j);
      t = G.add(t, psa(G.norm(t, `${p}.norm1`), p, spec.heads[i]!, spec.shifted[i]![j]! ? mask : null, grid));
      t = G.add(t, convFfn(G.norm(t, `${p}.norm2`), `${p}.mlp`));
    }
    t = G.add(res, G.toNhwc(G.resiConv(G.toNchw(t), `layers.${i}.conv`, spec.resiConnection)));
  });
  const body = G.add(G.resiConv(G.toNchw(G.norm(t, 'norm')), 'conv_after_body', spec.resiConnection), shallow);
  const out =
    spec.upsampler === 'none'
      ? G.add(x, G.conv(body, 'conv_last', G.get))
      : G.upsampleTail(body, spec.upsampler, spec.scale);
  G.cropToScaled(denormalizeOutput(G, out, mean, 1), padded.h, padded.w, spec.scale, 'output');
  return {
    onnx: G.g.toBytes({
      inChannels: spec.inChannels,
      outChannels: spec.outChannels,
      producer: 'crisp-convert (SRFormer)',
      doc: JSON.stringify(spec),
    }),
    spec,
  };
}

/**
 * Like DAT's (dat.ts), SRFormer's cost grows with heads × keys as well as with the MACs; the two constants are
 * fitted to the two released sizes (`npm run bench -- --only arch`): SRFormer-light 1.5× and SRFormer 14×.
 */
const SRFORMER_FIT = { macs: 1.25, perScore: 5e-5 };

function srformerRelativeCost(s: SrformerSpec): number {
  const e = s.embedDim;
  const keys = (s.windowSize * s.windowSize) / 4;
  const hidden = e * s.mlpRatio;
  // q (C→C), kv (C→C/2), proj; attention over the (ws/2)² permuted keys; ConvFFN with a 5×5 depth-wise conv.
  const block = 2.5 * e * e + 2 * keys * e + 2 * e * hidden + 25 * hidden;
  const blocks = s.depths.reduce((a, b) => a + b, 0);
  const macs =
    9 * s.inChannels * e + blocks * block + (s.depths.length + 1) * resiMacs(e, s.resiConnection) + tailMacs(e, s);
  const scores = s.depths.reduce((a, d, i) => a + d * s.heads[i]! * keys, 0);
  return fitted(macs, scores, SRFORMER_FIT);
}

export const srformer: Architecture<SrformerSpec> = {
  kind: 'srformer',
  name: 'SRFormer',
  openModelDb: ['srformer'],
  detect: (dict) => (looksLikeSrformer(dict) ? detectSrformer(dict) : undefined),
  describe: describeSrformer,
  // SRFormer reflect-pads (and repeats the edge where a reflection cannot reach), so it takes any tile down to 1×1.
  tiling: (s) => ({ window: s.windowSize, minSide: 1, relativeCost: srformerRelativeCost(s) }),
  build: (spec, dict) => buildSrformerOnnx(dict, spec).onnx,
};
