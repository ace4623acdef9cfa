/**
 * Architecture descriptions shared by the state-dict and ncnn front ends and the ONNX builders.
 */
import { describeDat, type DatSpec } from './dat.js';
import type { HatSpec } from './hat.js';
import { describeSrformer, type SrformerSpec } from './srformer.js';
import type { Tensor } from './stateDict.js';
import { datRelativeCost, hatRelativeCost, srformerRelativeCost, swinirRelativeCost } from './transformerCost.js';
import type { SwinirSpec } from './swinir.js';
import { CrispError } from '../../contract/errorCatalog.js';

export type SrvggActivation = 'prelu' | 'relu' | 'leakyrelu';

/** Real-ESRGAN's SRVGGNetCompact: conv → act → (conv → act)×numConv → conv → PixelShuffle, + nearest(input). */
export interface SrvggSpec {
  kind: 'srvgg';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  numConv: number;
  scale: number;
  activation: SrvggActivation;
}

/** ESRGAN / BasicSR RRDBNet. unshuffle is the pixel-unshuffle factor BasicSR applies for x2 (2) and x1 (4). */
export interface RrdbSpec {
  kind: 'rrdb';
  layout: 'esrgan' | 'basicsr';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  numGrowCh: number;
  numBlocks: number;
  numUpsample: number;
  unshuffle: number;
  scale: number;
}

/** SPAN (Swift Parameter-free Attention Network): six SPAB blocks of Conv3XC layers, fused at conversion. */
export interface SpanSpec {
  kind: 'span';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  scale: number;
  /** Subtracts the DIV2K RGB mean and multiplies by 255 first (absent "no_norm" buffer). */
  norm: boolean;
}

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

/** OmniSR: residual groups of OSA blocks (block/grid window attention + channel attention) and ESA. */
export interface OmniSrSpec {
  kind: 'omnisr';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  /** OSA blocks per group. */
  blockNum: number;
  /** Residual groups (OSAG). */
  resNum: number;
  windowSize: number;
  /** Relative position bias in the window attention. */
  pe: boolean;
  bias: boolean;
  scale: number;
}

export type ArchSpec =
  SrvggSpec | RrdbSpec | SpanSpec | RealPlksrSpec | OmniSrSpec | SwinirSpec | HatSpec | DatSpec | SrformerSpec;

/** The architecture's display name. */
export const ARCH_NAMES: Record<ArchSpec['kind'], string> = {
  srvgg: 'SRVGGNetCompact',
  rrdb: 'RRDBNet',
  span: 'SPAN',
  realplksr: 'RealPLKSR',
  omnisr: 'OmniSR',
  swinir: 'SwinIR',
  hat: 'HAT',
  dat: 'DAT',
  srformer: 'SRFormer',
};

/**
 * What the tile planner needs to know: the side an input must be a multiple of (the graph pads inside, so
 * tiles that already are waste nothing), the smallest side it accepts, and the CPU time per input pixel relative
 * to SRVGGNetCompact at the released sizes (`npm run bench -- --only arch`, two runs on 2026-11-25, averaged and
 * rounded; figures in docs/models.md).
 */
export interface ArchTiling {
  window: number;
  minSide: number;
  relativeCost: number;
}

export function tilingOf(spec: ArchSpec): ArchTiling {
  switch (spec.kind) {
    // The graphs reflect-pad to the window, which needs a tile of at least one window.
    case 'swinir':
      return { window: spec.windowSize, minSide: spec.windowSize, relativeCost: swinirRelativeCost(spec) };
    case 'hat':
      return { window: spec.windowSize, minSide: spec.windowSize, relativeCost: hatRelativeCost(spec) };
    // DAT pads q/k/v inside each attention to its longer window side; SRFormer reflect-pads (and repeats the
    // edge where a reflection cannot reach), so both take any tile down to 1×1.
    case 'dat':
      return { window: Math.max(...spec.splitSize), minSide: 1, relativeCost: datRelativeCost(spec) };
    case 'srformer':
      return { window: spec.windowSize, minSide: 1, relativeCost: srformerRelativeCost(spec) };
    case 'omnisr':
      // ESA's stride-2 conv and 7×7 max pool need 16 pixels after padding.
      return { window: spec.windowSize, minSide: 16, relativeCost: 2.3 };
    case 'realplksr':
      return { window: 1, minSide: 1, relativeCost: spec.dysample ? 6.7 : 6.3 };
    case 'span':
      return { window: 1, minSide: 1, relativeCost: 0.35 };
    case 'rrdb':
      return { window: 1, minSide: 1, relativeCost: 12 };
    case 'srvgg':
      return { window: 1, minSide: 1, relativeCost: 1 };
  }
}

export interface ConvWeights {
  weight: Tensor;
  bias: Tensor | null;
}

/** A catalog `unsupported-architecture` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class UnsupportedArchitectureError extends CrispError {
  override readonly name = 'UnsupportedArchitectureError';
  constructor(message: string) {
    super('unsupported-architecture', message);
  }
}

function channels(spec: ArchSpec): string {
  if (spec.inChannels === 3 && spec.outChannels === 3) return '';
  const name = (c: number) => (c === 1 ? 'grey' : c === 3 ? 'RGB' : c === 4 ? 'RGBA' : `${c} channels`);
  return spec.inChannels === spec.outChannels
    ? `, ${name(spec.inChannels)}`
    : `, ${name(spec.inChannels)} → ${name(spec.outChannels)}`;
}

export function describeSpec(spec: ArchSpec): string {
  const ch = channels(spec);
  switch (spec.kind) {
    case 'srvgg':
      return `SRVGGNetCompact x${spec.scale} (${spec.numFeat} feat, ${spec.numConv} conv, ${spec.activation}${ch})`;
    case 'rrdb':
      return `RRDBNet x${spec.scale} (${spec.layout} keys, ${spec.numBlocks} blocks, ${spec.numFeat} feat, ${spec.numGrowCh} grow${ch})`;
    case 'span':
      return `SPAN x${spec.scale} (${spec.numFeat} feat${spec.norm ? '' : ', no norm'}${ch})`;
    case 'realplksr':
      return `RealPLKSR x${spec.scale} (${spec.dim} dim, ${spec.numBlocks} blocks, kernel ${spec.kernelSize}, ${spec.dysample ? 'DySample' : 'PixelShuffle'}${spec.layerNorm ? ', LayerNorm' : ''}${spec.useEa ? '' : ', no EA'}${ch})`;
    case 'omnisr':
      return `OmniSR x${spec.scale} (${spec.numFeat} feat, ${spec.resNum} groups × ${spec.blockNum} blocks, window ${spec.windowSize}${spec.pe ? '' : ', no position bias'}${ch})`;
    case 'swinir':
      return `SwinIR ${spec.variant} x${spec.scale} (embed ${spec.embedDim}, depths ${spec.depths.join('/')}, heads ${spec.numHeads.join('/')}, window ${spec.windowSize}, mlp ${spec.mlpRatio}, ${spec.resiConnection}${spec.imgRange === 1 ? '' : `, range ${spec.imgRange}`}${ch})`;
    case 'hat':
      return `${spec.variant} x${spec.scale} (embed ${spec.embedDim}, depths ${spec.depths.join('/')}, heads ${spec.numHeads.join('/')}, window ${spec.windowSize}, overlap window ${spec.overlapWindow}, mlp ${spec.mlpRatio}, CAB ${spec.cabChannels}/${spec.squeezeChannels}${spec.resiConnection === '1conv' ? '' : ', no residual conv'}${ch})`;
    case 'dat':
      return describeDat(spec);
    case 'srformer':
      return describeSrformer(spec);
  }
}

/**
 * The tiling needs of a converted model, from the spec Crisp writes into its ONNX doc string (null for models
 * converted elsewhere: they get the CNN defaults).
 */
export function tilingFromDoc(doc: string | undefined): ArchTiling | null {
  if (!doc?.startsWith('{')) return null;
  try {
    const spec = JSON.parse(doc) as Partial<ArchSpec>;
    if (typeof spec.kind !== 'string' || !(spec.kind in ARCH_NAMES)) return null;
    return tilingOf(spec as ArchSpec);
  } catch {
    return null;
  }
}
