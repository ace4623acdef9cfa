/**
 * MoSR (Mamba Out Super-Resolution, umzi2 / traiNNer-redux 2024; spandrel's `MoSR`): detection from a state dict
 * and the ONNX graph, with any of its three upsamplers: PixelShuffle ("ps"), DySample ("dys", graph/dySample.ts)
 * and the geo-ensemble PixelShuffle ("gps").
 *
 * `gblocks` is conv → N gated CNN blocks (MambaOut's unit: channel LayerNorm → 3×3 fc1 split into gate, identity
 * and a depthwise-conv part → Mish(fc2(Mish(gate) · [identity, dwconv])) + input − 0.5) → conv, Mish, conv, Mish,
 * 1×1 conv; a shortcut ConvBlock (two 3×3 convs with Mish, plus a 1×1) is added, less 0.5, before the upsampler.
 */
import { channelsNote, cnnTiling, UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { dySample, dySampleGroups } from '../graph/dySample.js';
import {
  attr,
  channelLayerNorm,
  constant,
  convFrom,
  convWith,
  finishModel,
  GraphBuilder,
  imagePorts,
  int64Const,
  mish,
  pixelShuffle,
  Weights,
} from '../graph/graphOps.js';
import { COMPACT_MACS } from '../graph/transformerCost.js';
import type { StateDict } from '../checkpoint/stateDict.js';

export type MosrUpsampler = 'ps' | 'dys' | 'gps';

export interface MosrSpec {
  kind: 'mosr';
  inChannels: number;
  outChannels: number;
  dim: number;
  numBlocks: number;
  /** fc1's half width (dim × expansion ratio): the gate's channels. */
  hidden: number;
  /** Channels of the depthwise conv (dim × conv ratio), the tail of fc1's second half. */
  convChannels: number;
  kernelSize: number;
  upsampler: MosrUpsampler;
  scale: number;
}

/** The geo-ensemble upsampler averages this many predictions (fixed by the architecture). */
const GPS_ENSEMBLE = 8;
/** DySample's sampling groups in MoSR (the reference never changes the default). */
const DYS_GROUPS = 4;

export function looksLikeMosr(dict: StateDict): boolean {
  return ['gblocks.0.weight', 'gblocks.1.norm.weight', 'gblocks.1.fc1.weight', 'gblocks.1.conv.weight'].every((k) =>
    dict.has(k),
  );
}

function exactRoot(n: number): number | null {
  const r = Math.round(Math.sqrt(n));
  return r >= 1 && r * r === n ? r : null;
}

export function detectMosr(dict: StateDict): MosrSpec {
  const w = new Weights(dict, 'MoSR');
  const first = w.get('gblocks.0.weight').shape;
  const dim = first[0]!;
  const inChannels = first[1]!;
  // gblocks = conv, blocks…, conv, Mish, conv, Mish, 1×1 conv.
  const numBlocks = w.seqLen('gblocks') - 6;
  const tail = [1, 3, 5].map((i) => `gblocks.${numBlocks + i}.weight`);
  if (numBlocks < 1 || !tail.every((k) => dict.has(k)) || dict.has(`gblocks.${numBlocks}.weight`)) {
    throw new UnsupportedArchitectureError(`MoSR gblocks has an unexpected layout (${numBlocks + 6} entries)`);
  }
  const hidden = w.get('gblocks.1.fc1.weight').shape[0]! / 2;
  const dw = w.get('gblocks.1.conv.weight').shape;
  const convChannels = dw[0]!;
  if (!Number.isInteger(hidden) || convChannels > hidden || dw[1] !== 1) {
    throw new UnsupportedArchitectureError(
      `MoSR gated block has ${convChannels} depthwise channels for a gate of ${hidden}`,
    );
  }
  w.get('shortcut.conv11.weight');
  const base = { kind: 'mosr' as const, inChannels, dim, numBlocks, hidden, convChannels, kernelSize: dw[2]! };
  const unsupportedScale = (what: string): never => {
    throw new UnsupportedArchitectureError(`MoSR ${what} does not give an integer scale`);
  };
  if (dict.has('upsampler.init_pos')) {
    const scale =
      exactRoot(w.get('upsampler.offset.weight').shape[0]! / (2 * DYS_GROUPS)) ?? unsupportedScale('DySample');
    dySampleGroups(w, 'upsampler', { channels: dim, scale });
    return { ...base, outChannels: w.get('upsampler.end_conv.weight').shape[0]!, upsampler: 'dys', scale };
  }
  if (dict.has('upsampler.in_to_k.weight')) {
    const outputs = w.get('upsampler.in_to_k.weight').shape[0]!;
    const scale = exactRoot(outputs / GPS_ENSEMBLE / inChannels) ?? unsupportedScale('geo-ensemble PixelShuffle');
    return { ...base, outChannels: inChannels, upsampler: 'gps', scale };
  }
  const scale = exactRoot(w.get('upsampler.0.weight').shape[0]! / inChannels) ?? unsupportedScale('PixelShuffle');
  return { ...base, outChannels: inChannels, upsampler: 'ps', scale };
}

/** x − 0.5 + y: the reference's residual form (shortcut − 0.5 added to the branch). */
const addLessHalf = (g: GraphBuilder, x: string, y: string): string =>
  g.node('Add', [y, g.node('Sub', [x, constant(g, 0.5)])]);

function gatedBlock(g: GraphBuilder, w: Weights, x: string, pre: string, spec: MosrSpec): string {
  const slice = (t: string, from: number, to: number): string =>
    g.node('Slice', [t, int64Const(g, [from]), int64Const(g, [to]), int64Const(g, [1])]);
  const fc1 = convFrom(g, w, channelLayerNorm(g, w, x, `${pre}.norm`, 1e-6), `${pre}.fc1`);
  const h = spec.hidden;
  const gate = slice(fc1, 0, h);
  const dw = convFrom(g, w, slice(fc1, 2 * h - spec.convChannels, 2 * h), `${pre}.conv`, {
    group: spec.convChannels,
  });
  const value =
    spec.convChannels === h
      ? dw
      : g.node('Concat', [slice(fc1, h, 2 * h - spec.convChannels), dw], { axis: attr.int(1) });
  const y = mish(g, convFrom(g, w, g.node('Mul', [mish(g, gate), value]), `${pre}.fc2`));
  return addLessHalf(g, x, y);
}

/**
 * The geo-ensemble PixelShuffle: in_to_k predicts 8 stacks of out·s² channels and the reference averages them.
 * The mean of 8 convolutions of the same input is one convolution with the mean kernel and bias (linear), so the
 * graph runs one conv 8× narrower; the change is float rounding (≪ 1e-4).
 */
function geoEnsemble(g: GraphBuilder, w: Weights, x: string, spec: MosrSpec): string {
  const wt = w.get('upsampler.in_to_k.weight');
  const bt = w.dict.get('upsampler.in_to_k.bias') ?? null;
  const per = wt.shape[0]! / GPS_ENSEMBLE;
  const size = wt.data.length / GPS_ENSEMBLE;
  const mean = (t: Float32Array, n: number): Float32Array => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let k = 0; k < GPS_ENSEMBLE; k++) s += t[k * n + i]!;
      out[i] = s / GPS_ENSEMBLE;
    }
    return out;
  };
  const weight = { shape: [per, ...wt.shape.slice(1)], data: mean(wt.data, size) };
  const bias = bt ? { shape: [per], data: mean(bt.data, per) } : null;
  return pixelShuffle(g, convWith(g, x, 'upsampler.in_to_k_mean', weight, bias), spec.scale);
}

export function buildMosrOnnx(spec: MosrSpec, dict: StateDict, opts: { rgbPorts?: boolean } = {}): Uint8Array {
  const w = new Weights(dict, 'MoSR');
  const g = new GraphBuilder('MoSR');
  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  const input = ports.input;
  let x = convFrom(g, w, input, 'gblocks.0');
  for (let b = 1; b <= spec.numBlocks; b++) x = gatedBlock(g, w, x, `gblocks.${b}`, spec);
  const n = spec.numBlocks;
  x = mish(g, convFrom(g, w, mish(g, convFrom(g, w, x, `gblocks.${n + 1}`)), `gblocks.${n + 3}`));
  x = convFrom(g, w, x, `gblocks.${n + 5}`);
  const short = g.node('Add', [
    mish(g, convFrom(g, w, mish(g, convFrom(g, w, input, 'shortcut.block.0')), 'shortcut.block.2')),
    convFrom(g, w, input, 'shortcut.conv11'),
  ]);
  x = addLessHalf(g, short, x);
  const out =
    spec.upsampler === 'dys'
      ? dySample(g, w, x, 'upsampler', { channels: spec.dim, scale: spec.scale })
      : spec.upsampler === 'gps'
        ? geoEnsemble(g, w, x, spec)
        : pixelShuffle(g, convFrom(g, w, x, 'upsampler.0'), spec.scale);
  return finishModel(g, ports, out, spec);
}

/**
 * Multiply-adds per input pixel. The planner's relative cost is MoSR's over the shipped SRVGGNetCompact's
 * (graph/transformerCost.ts, ≈ 1.2 M), times MEASURED_OVER_MACS: the released 64-dim, 24-block MoSR is ≈ 4.3 M
 * (3.5× by multiply-adds) and measured 4.2× (PixelShuffle) and 4.0× (DySample) the compact model on a 256² tile
 * (`CRISP_BENCH_QUICK=1 CRISP_BENCH_ARCH=MoSR npm run bench -- --only arch`, 2026-11-27, load ~12).
 */
const MEASURED_OVER_MACS = 1.2;

function mosrMacs(s: MosrSpec): number {
  const block = 9 * s.dim * 2 * s.hidden + 9 * s.hidden * s.dim + s.kernelSize ** 2 * s.convChannels;
  const tail = 2 * 9 * s.dim * 2 * s.dim + s.dim * s.dim;
  const shortcut = 9 * s.inChannels * s.dim + 9 * s.dim * s.dim + s.inChannels * s.dim;
  const up =
    s.upsampler === 'dys'
      ? (2 * s.dim * 2 * DYS_GROUPS + s.dim * s.outChannels) * s.scale ** 2
      : 9 * s.dim * s.outChannels * s.scale ** 2;
  return 9 * s.inChannels * s.dim + s.numBlocks * block + tail + shortcut + up;
}

const UPSAMPLER_NAMES: Record<MosrUpsampler, string> = {
  ps: 'PixelShuffle',
  dys: 'DySample',
  gps: 'geo-ensemble PixelShuffle',
};

export const mosr: Architecture<MosrSpec> = {
  kind: 'mosr',
  name: 'MoSR',
  openModelDb: ['mosr'],
  detect: (dict) => (looksLikeMosr(dict) ? detectMosr(dict) : undefined),
  describe: (s) =>
    `MoSR x${s.scale} (${s.dim} dim, ${s.numBlocks} blocks, kernel ${s.kernelSize}, ${UPSAMPLER_NAMES[s.upsampler]}${channelsNote(s)})`,
  tiling: (s) => cnnTiling(Math.max(0.1, Math.round((mosrMacs(s) / COMPACT_MACS) * MEASURED_OVER_MACS * 10) / 10)),
  build: (spec, dict, opts) => buildMosrOnnx(spec, dict, opts),
};
