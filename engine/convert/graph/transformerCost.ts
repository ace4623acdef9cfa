/**
 * The arithmetic behind the window-attention transformers' tile cost (each architecture's `tiling` estimates its
 * cost from the detected configuration: their sizes vary tenfold, SwinIR-S to SwinIR-L, HAT-S to HAT-L, rather
 * than one figure per architecture).
 *
 * Multiply-accumulates per input pixel, counted from the layers, relative to the shipped SRVGGNetCompact ×4
 * (realesr-general-x4v3, 64 features × 32 convs). `relative` adds a per-block term for the memory-bound work
 * (LayerNorm, softmax, window transposes) that MACs do not count; its two constants were fitted to
 * `npm run bench -- --only arch` (SwinIR-S 2×, SwinIR-M 14×, HAT-S 17× compact on a 256² tile). `fitted` takes
 * an architecture's own two constants instead (DAT, SRFormer: see their modules).
 */

/** realesr-general-x4v3: 3→64, 32 × (64→64), 64→48, all 3×3. */
export const COMPACT_MACS = 9 * (3 * 64 + 32 * 64 * 64 + 64 * 48);
const MAC_FACTOR = 1.3;
const PER_BLOCK = 0.05;
/** The tails' feature width (num_feat), 64 in every released SwinIR / HAT. */
export const TAIL_FEAT = 64;

/** A Swin block per token: qkv + proj, the MLP, and q·kᵀ and attn·v over `keys` tokens. */
export function blockMacs(embed: number, mlpRatio: number, keys: number): number {
  return 4 * embed * embed + 2 * embed * embed * mlpRatio + 2 * keys * embed;
}

/** Pixel-shuffle tail: conv_before_upsample, one ×2 (or ×3) stage after another, conv_last at the output. */
export function shuffleTailMacs(embed: number, scale: number, out: number): number {
  let macs = 9 * embed * TAIL_FEAT;
  let area = 1;
  for (const r of scale === 3 ? [3] : Array.from({ length: Math.log2(scale) }, () => 2)) {
    macs += 9 * TAIL_FEAT * TAIL_FEAT * r * r * area;
    area *= r * r;
  }
  return macs + 9 * TAIL_FEAT * out * scale * scale;
}

export function relative(macs: number, blocks: number): number {
  return Math.max(1, Math.round((macs / COMPACT_MACS) * MAC_FACTOR + PER_BLOCK * blocks));
}

export function fitted(macs: number, scores: number, fit: { macs: number; perScore: number }): number {
  return Math.max(0.1, Math.round(((macs / COMPACT_MACS) * fit.macs + fit.perScore * scores) * 10) / 10);
}

/** 1conv: one 3×3 C→C; 3conv: 3×3 C→C/4, 1×1, 3×3 C/4→C. */
export function resiMacs(e: number, kind: '1conv' | '3conv'): number {
  return kind === '1conv' ? 9 * e * e : 2 * 9 * e * (e / 4) + (e / 4) ** 2;
}

export function tailMacs(
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
