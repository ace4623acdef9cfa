/**
 * SRVGGNetCompact (Real-ESRGAN "compact" models): detection from a state dict and the ONNX graph.
 * The graph mirrors the reference export in shared/models/onnx: Conv/PRelu pairs, DepthToSpace
 * (mode CRD, which is exactly torch's PixelShuffle), and a nearest-upsampled copy of the input added
 * as the residual base.
 */
import {
  channelsNote,
  cnnTiling,
  UnsupportedArchitectureError,
  type Architecture,
  type ConvWeights,
  type DetectOptions,
} from './architecture.js';
import { attr, GraphBuilder } from '../graph/onnxWriter.js';
import type { StateDict } from '../checkpoint/stateDict.js';

export type SrvggActivation = 'prelu' | NonNullable<DetectOptions['srvggActivation']>;

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

export interface SrvggWeights {
  /** numConv + 2 convolutions, first to last. */
  convs: ConvWeights[];
  /** One slope vector per activation (numConv + 1) for PReLU; null otherwise. */
  slopes: Float32Array[] | null;
}

/** LeakyReLU slope SRVGGNetCompact uses for act_type='leakyrelu'. */
export const SRVGG_LEAKY_SLOPE = 0.1;

export function looksLikeSrvgg(dict: StateDict): boolean {
  return (
    dict.has('body.0.weight') &&
    !dict.has('conv_first.weight') &&
    [...dict.keys()].every((k) => /^body\.\d+\.(weight|bias)$/.test(k))
  );
}

/**
 * Reads hyper-parameters from the keys: convolutions sit at even body indices, activations at odd
 * ones. ReLU and LeakyReLU have no parameters, so they cannot be told apart from the weights;
 * `activation` lets the caller say which (default leakyrelu, BasicSR's other built-in choice).
 */
export function detectSrvgg(
  dict: StateDict,
  activation: Exclude<SrvggActivation, 'prelu'> = 'leakyrelu',
): { spec: SrvggSpec; weights: SrvggWeights } {
  const convIdx: number[] = [];
  const actIdx: number[] = [];
  for (const [k, t] of dict) {
    const m = /^body\.(\d+)\.weight$/.exec(k);
    if (!m) continue;
    const i = Number(m[1]);
    if (t.shape.length === 4) convIdx.push(i);
    else actIdx.push(i);
  }
  convIdx.sort((a, b) => a - b);
  actIdx.sort((a, b) => a - b);
  const n = convIdx.length;
  if (n < 2 || convIdx.some((v, i) => v !== 2 * i)) {
    throw new UnsupportedArchitectureError(
      `body.* keys look like SRVGGNetCompact but the convolutions are at body indices ${convIdx.join(',')}`,
    );
  }
  const prelu = actIdx.length > 0;
  if (prelu && (actIdx.length !== n - 1 || actIdx.some((v, i) => v !== 2 * i + 1))) {
    throw new UnsupportedArchitectureError(`SRVGGNetCompact PReLU weights at unexpected indices ${actIdx.join(',')}`);
  }
  const convs: ConvWeights[] = convIdx.map((i) => ({
    weight: dict.get(`body.${i}.weight`)!,
    bias: dict.get(`body.${i}.bias`) ?? null,
  }));
  const first = convs[0]!.weight.shape;
  const last = convs[n - 1]!.weight.shape;
  const numFeat = first[0]!;
  const inChannels = first[1]!;
  const outChannels = inChannels;
  const scale = Math.round(Math.sqrt(last[0]! / outChannels));
  if (scale * scale * outChannels !== last[0]) {
    throw new UnsupportedArchitectureError(
      `SRVGGNetCompact last conv has ${last[0]} outputs, not ${outChannels}×scale²`,
    );
  }
  for (const c of convs) {
    if (c.weight.shape[2] !== 3 || c.weight.shape[3] !== 3)
      throw new UnsupportedArchitectureError('SRVGGNetCompact convolution is not 3×3');
  }
  const slopes = prelu ? actIdx.map((i) => dict.get(`body.${i}.weight`)!.data) : null;
  const spec: SrvggSpec = {
    kind: 'srvgg',
    inChannels,
    outChannels,
    numFeat,
    numConv: n - 2,
    scale,
    activation: prelu ? 'prelu' : activation,
  };
  return { spec, weights: { convs, slopes } };
}

export function buildSrvggOnnx(
  spec: SrvggSpec,
  weights: SrvggWeights,
  opts: { negativeSlope?: number; producer?: string } = {},
): Uint8Array {
  const g = new GraphBuilder('SRVGGNetCompact');
  let x = 'input';
  const n = weights.convs.length;
  weights.convs.forEach((c, i) => {
    const w = g.weight(`body.${2 * i}.weight`, c.weight.shape, c.weight.data);
    const b = c.bias ? g.weight(`body.${2 * i}.bias`, c.bias.shape, c.bias.data) : null;
    const k = c.weight.shape[2]!;
    const p = (k - 1) / 2;
    x = g.conv(x, w, b, [k, c.weight.shape[3]!], [p, p, p, p]);
    if (i === n - 1) return;
    if (spec.activation === 'prelu') {
      const s = weights.slopes?.[i];
      if (!s) throw new UnsupportedArchitectureError(`PReLU slope ${i} missing`);
      // Shape [C,1,1] so the per-channel slope broadcasts over [N,C,H,W] (as torch's export does).
      const slope = g.weight(`body.${2 * i + 1}.weight`, s.length === 1 ? [1] : [s.length, 1, 1], s);
      x = g.node('PRelu', [x, slope]);
    } else if (spec.activation === 'relu') {
      x = g.node('Relu', [x]);
    } else {
      x = g.node('LeakyRelu', [x], { alpha: attr.float(opts.negativeSlope ?? SRVGG_LEAKY_SLOPE) });
    }
  });
  if (spec.scale > 1) {
    x = g.node('DepthToSpace', [x], { blocksize: attr.int(spec.scale), mode: attr.string('CRD') });
    const base = g.resizeNearest('input', spec.scale, spec.scale);
    g.node('Add', [x, base], {}, 'output');
  } else {
    g.node('Add', [x, 'input'], {}, 'output');
  }
  return g.toBytes({
    inChannels: spec.inChannels,
    outChannels: spec.outChannels,
    producer: opts.producer ?? 'crisp-convert',
    doc: JSON.stringify(spec),
  });
}

export const srvgg: Architecture<SrvggSpec> = {
  kind: 'srvgg',
  name: 'SRVGGNetCompact',
  openModelDb: ['compact'],
  detect: (dict, opts) => (looksLikeSrvgg(dict) ? detectSrvgg(dict, opts.srvggActivation).spec : undefined),
  describe: (s) =>
    `SRVGGNetCompact x${s.scale} (${s.numFeat} feat, ${s.numConv} conv, ${s.activation}${channelsNote(s)})`,
  tiling: () => cnnTiling(1),
  build: (spec, dict) =>
    buildSrvggOnnx(spec, detectSrvgg(dict, spec.activation === 'prelu' ? undefined : spec.activation).weights),
};
