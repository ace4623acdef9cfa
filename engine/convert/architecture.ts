/**
 * Architecture descriptions shared by the state-dict and ncnn front ends and the ONNX builders.
 */
import { describeDat, type DatSpec } from './dat.js';
import { describeSrformer, type SrformerSpec } from './srformer.js';
import type { Tensor } from './stateDict.js';
import { describeSwinir, type SwinirSpec } from './swinir.js';

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

export type ArchSpec = SrvggSpec | RrdbSpec | SwinirSpec | DatSpec | SrformerSpec;

export interface ConvWeights {
  weight: Tensor;
  bias: Tensor | null;
}

export class UnsupportedArchitectureError extends Error {
  override readonly name = 'UnsupportedArchitectureError';
}

export function describeSpec(spec: ArchSpec): string {
  if (spec.kind === 'swinir') return describeSwinir(spec);
  if (spec.kind === 'dat') return describeDat(spec);
  if (spec.kind === 'srformer') return describeSrformer(spec);
  if (spec.kind === 'srvgg') {
    return `SRVGGNetCompact x${spec.scale} (${spec.numFeat} feat, ${spec.numConv} conv, ${spec.activation})`;
  }
  return `RRDBNet x${spec.scale} (${spec.layout} keys, ${spec.numBlocks} blocks, ${spec.numFeat} feat, ${spec.numGrowCh} grow)`;
}
