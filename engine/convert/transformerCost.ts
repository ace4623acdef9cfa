/**
 * The tile planner's cost for the window-attention transformers, estimated from the detected configuration
 * (their sizes vary tenfold: SwinIR-S to SwinIR-L, HAT-S to HAT-L) rather than one figure per architecture.
 *
 * Multiply-accumulates per input pixel, counted from the layers, relative to the shipped SRVGGNetCompact ×4
 * (realesr-general-x4v3, 64 features × 32 convs), plus a per-block term for the memory-bound work (LayerNorm,
 * softmax, window transposes) that MACs do not count. The two constants were fitted to
 * `npm run bench -- --only arch` (SwinIR-S 2×, SwinIR-M 14×, HAT-S 17× compact on a 256² tile).
 */
import type { HatSpec } from './hat.js';
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
