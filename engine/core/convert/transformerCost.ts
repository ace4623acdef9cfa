/**
 * The tile planner's cost for the window-attention transformers, estimated from the detected configuration
 * (their sizes vary tenfold: SwinIR-S to SwinIR-L, HAT-S to HAT-L) rather than one figure per architecture.
 *
 * Multiply-accumulates per input pixel, counted from the layers, relative to the shipped SRVGGNetCompact ×4
 * (realesr-general-x4v3, 64 features × 32 convs), plus a per-block term for the memory-bound work (LayerNorm,
 * softmax, window transposes) that MACs do not count. The two constants were fitted to
 * `npm run bench -- --only arch` (SwinIR-S 2×, SwinIR-M 14×, HAT-S 17× compact on a 256² tile).
 */
import type { DatSpec } from './dat.js';
import type { HatSpec } from './hat.js';
import type { SrformerSpec } from './srformer.js';
import type { SwinirSpec } from './swinir.js';

/** realesr-general-x4v3: 3→64, 32 × (64→64), 64→48, all 3×3. */
const COMPACT_MACS = 9 * (3 * 64 + 32 * 64 * 64 + 64 * 48);
const MAC_FACTOR = 1.3;
const PER_BLOCK = 0.05;
/** The tails' feature width (num_feat), 64 in every released SwinIR / HAT. */
const TAIL_FEAT = 64;

/** A Swin block per token: qkv + proj, the MLP, and q·kᵀ and attn·v over `keys` tokens. */
function blockMacs(embed: number, mlpRatio: number, keys: number): number {
  return 4 * embed * embed + 2 * embed * embed * mlpRatio + 2 * keys * embed;
}

/** Pixel-shuffle tail: conv_before_upsample, one ×2 (or ×3) stage after another, conv_last at the output. */
function shuffleTailMacs(embed: number, scale: number, out: number): number {
  let macs = 9 * embed * TAIL_FEAT;
  let area = 1;
  for (const r of scale === 3 ? [3] : Array.from({ length: Math.log2(scale) }, () => 2)) {
    macs += 9 * TAIL_FEAT * TAIL_FEAT * r * r * area;
    area *= r * r;
  }
  return macs + 9 * TAIL_FEAT * out * scale * scale;
}

function relative(macs: number, blocks: number): number {
  return Math.max(1, Math.round((macs / COMPACT_MACS) * MAC_FACTOR + PER_BLOCK * blocks));
}

export function swinirRelativeCost(s: SwinirSpec): number {
  const e = s.embedDim;
  const blocks = s.depths.reduce((a, b) => a + b, 0);
  const resi = s.resiConnection === '1conv' ? 9 * e * e : 9 * e * (e / 4) * 2 + (e / 4) ** 2;
  let macs = 9 * s.inChannels * e + blocks * blockMacs(e, s.mlpRatio, s.windowSize ** 2);
  macs += (s.depths.length + 1) * resi;
  const area = s.scale * s.scale;
  if (s.upsampler === 'pixelshuffle') macs += shuffleTailMacs(e, s.scale, s.outChannels);
  else if (s.upsampler === 'pixelshuffledirect') macs += 9 * e * s.outChannels * area;
  else if (s.upsampler === 'nearest+conv') {
    macs += 9 * e * TAIL_FEAT + 9 * TAIL_FEAT * (TAIL_FEAT + s.outChannels) * area;
    for (let a = 4; a <= area; a *= 4) macs += 9 * TAIL_FEAT * TAIL_FEAT * a;
  } else macs += 9 * e * s.outChannels;
  return relative(macs, blocks);
}

export function hatRelativeCost(s: HatSpec): number {
  const e = s.embedDim;
  const blocks = s.depths.reduce((a, b) => a + b, 0);
  const cab = 2 * 9 * e * s.cabChannels + 2 * e * s.squeezeChannels;
  let macs = 9 * s.inChannels * e + blocks * (blockMacs(e, s.mlpRatio, s.windowSize ** 2) + cab);
  macs += s.depths.length * blockMacs(e, s.mlpRatio, s.overlapWindow ** 2);
  if (s.resiConnection === '1conv') macs += (s.depths.length + 1) * 9 * e * e;
  macs += shuffleTailMacs(e, s.scale, s.outChannels);
  return relative(macs, blocks + s.depths.length);
}

/**
 * DAT and SRFormer attend over many more keys per token than SwinIR (256 in DAT's 8×32 windows), and the
 * memory-bound work around the score matrix (bias and mask adds, softmax) grows with heads × keys, not with
 * the MACs. Each architecture's two constants are fitted to its two released sizes measured on a quiet
 * machine (`npm run bench -- --only arch`, compact 2.2 s per 256² tile): DAT-light 1.6× and DAT-2 19×,
 * SRFormer-light 1.5× and SRFormer 14×.
 */
const DAT_FIT = { macs: 1.67, perScore: 3.4e-5 };
const SRFORMER_FIT = { macs: 1.25, perScore: 5e-5 };

function fitted(macs: number, scores: number, fit: { macs: number; perScore: number }): number {
  return Math.max(0.1, Math.round(((macs / COMPACT_MACS) * fit.macs + fit.perScore * scores) * 10) / 10);
}

/** 1conv: one 3×3 C→C; 3conv: 3×3 C→C/4, 1×1, 3×3 C/4→C. */
function resiMacs(e: number, kind: '1conv' | '3conv'): number {
  return kind === '1conv' ? 9 * e * e : 2 * 9 * e * (e / 4) + (e / 4) ** 2;
}

function tailMacs(
  e: number,
  s: { upsampler: 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv' | 'none'; scale: number; outChannels: number },
): number {
  const area = s.scale * s.scale;
  if (s.upsampler === 'pixelshuffle') return shuffleTailMacs(e, s.scale, s.outChannels);
  if (s.upsampler === 'pixelshuffledirect') return 9 * e * s.outChannels * area;
  if (s.upsampler === 'nearest+conv')
    return (
      9 * e * TAIL_FEAT + 9 * TAIL_FEAT * TAIL_FEAT * (4 + 16) + 9 * TAIL_FEAT * (TAIL_FEAT + s.outChannels) * area
    );
  return 9 * e * s.outChannels;
}

export function datRelativeCost(s: DatSpec): number {
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

export function srformerRelativeCost(s: SrformerSpec): number {
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
