/**
 * Swift-SRGAN (Krishnan & Pai 2021, Koushik0901/Swift-SRGAN; spandrel's `SwiftSRGAN`, CC0): detection from a
 * state dict and the ONNX graph.
 *
 * SRGAN's generator with every conv made depth-wise separable (a k×k depth-wise conv, then a 1×1): a 9×9 head
 * with PReLU, residual blocks (separable conv → BatchNorm → PReLU → separable conv → BatchNorm, plus the input),
 * a separable conv + BatchNorm added to the head's output, ×2 pixel-shuffle stages each followed by PReLU, and a
 * 9×9 separable conv into tanh, mapped to 0–1. The eval-mode BatchNorms are folded into the 1×1 convs.
 */
import { channelsNote, cnnTiling, UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { COMPACT_MACS } from '../graph/transformerCost.js';
import { constant, convWith, finishModel, GraphBuilder, imagePorts, pixelShuffle, Weights } from '../graph/graphOps.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

export interface SwiftSrganSpec {
  kind: 'swiftsrgan';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  numBlocks: number;
  scale: number;
}

const ARCH = 'Swift-SRGAN';
/** torch.nn.BatchNorm2d's default epsilon. */
const BN_EPS = 1e-5;

export function looksLikeSwiftSrgan(dict: StateDict): boolean {
  return dict.has('initial.cnn.depthwise.weight') && dict.has('final_conv.pointwise.weight');
}

export function detectSwiftSrgan(dict: StateDict): SwiftSrganSpec {
  const w = new Weights(dict, ARCH);
  const inChannels = w.get('initial.cnn.depthwise.weight').shape[0]!;
  const numFeat = w.get('initial.cnn.pointwise.weight').shape[0]!;
  const numBlocks = w.seqLen('residual');
  const stages = w.seqLen('upsampler');
  for (let i = 0; i < stages; i++) {
    const out = w.get(`upsampler.${i}.conv.pointwise.weight`).shape[0];
    if (out !== 4 * numFeat)
      throw new UnsupportedArchitectureError(`${ARCH} upsampler ${i} has ${out} outputs, not a ×2 pixel shuffle`);
  }
  const outChannels = w.get('final_conv.pointwise.weight').shape[0]!;
  if (outChannels !== inChannels)
    throw new UnsupportedArchitectureError(`${ARCH} with ${inChannels} input and ${outChannels} output channels`);
  return { kind: 'swiftsrgan', inChannels, outChannels, numFeat, numBlocks, scale: 2 ** stages };
}

/** The 1×1 conv `${pw}` with the eval-mode BatchNorm `${bn}` folded in: W·γ/√(σ²+ε), (b−μ)·γ/√(σ²+ε)+β. */
function foldBn(w: Weights, pw: string, bn: string): { weight: Tensor; bias: Tensor } {
  const wt = w.get(`${pw}.weight`);
  const out = wt.shape[0]!;
  const per = wt.data.length / out;
  const b = w.dict.get(`${pw}.bias`)?.data;
  const [gamma, beta, mean, variance] = ['weight', 'bias', 'running_mean', 'running_var'].map(
    (k) => w.get(`${bn}.${k}`).data,
  ) as [Float32Array, Float32Array, Float32Array, Float32Array];
  const data = new Float32Array(wt.data.length);
  const bias = new Float32Array(out);
  for (let o = 0; o < out; o++) {
    const s = gamma[o]! / Math.sqrt(variance[o]! + BN_EPS);
    for (let i = 0; i < per; i++) data[o * per + i] = wt.data[o * per + i]! * s;
    bias[o] = ((b?.[o] ?? 0) - mean[o]!) * s + beta[o]!;
  }
  return { weight: { shape: wt.shape, data }, bias: { shape: [out], data: bias } };
}

export function buildSwiftSrganOnnx(
  spec: SwiftSrganSpec,
  dict: StateDict,
  opts: { rgbPorts?: boolean } = {},
): Uint8Array {
  const w = new Weights(dict, ARCH);
  const g = new GraphBuilder('SwiftSRGAN');
  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  /** SeperableConv2d `${p}` (depth-wise k×k, then 1×1), with the BatchNorm `bn` folded into the 1×1. */
  const sep = (x: string, p: string, bn?: string): string => {
    const dw = w.get(`${p}.depthwise.weight`);
    const y = convWith(g, x, `${p}.depthwise`, dw, w.dict.get(`${p}.depthwise.bias`) ?? null, { group: dw.shape[0]! });
    const pw = bn
      ? foldBn(w, `${p}.pointwise`, bn)
      : { weight: w.get(`${p}.pointwise.weight`), bias: w.dict.get(`${p}.pointwise.bias`) ?? null };
    return convWith(g, y, `${p}.pointwise`, pw.weight, pw.bias);
  };
  const prelu = (x: string, key: string): string => {
    const s = w.get(key);
    // [C, 1, 1] so the per-channel slope broadcasts over [N, C, H, W].
    return g.node('PRelu', [x, g.weight(key, s.data.length === 1 ? [1] : [s.data.length, 1, 1], s.data)]);
  };
  const initial = prelu(sep(ports.input, 'initial.cnn'), 'initial.act.weight');
  let x = initial;
  for (let i = 0; i < spec.numBlocks; i++) {
    const p = `residual.${i}`;
    const y = prelu(sep(x, `${p}.block1.cnn`, `${p}.block1.bn`), `${p}.block1.act.weight`);
    x = g.node('Add', [sep(y, `${p}.block2.cnn`, `${p}.block2.bn`), x]);
  }
  x = g.node('Add', [sep(x, 'convblock.cnn', 'convblock.bn'), initial]);
  for (let i = 0; 2 ** i < spec.scale; i++)
    x = prelu(pixelShuffle(g, sep(x, `upsampler.${i}.conv`), 2), `upsampler.${i}.act.weight`);
  const out = g.node('Mul', [
    g.node('Add', [g.node('Tanh', [sep(x, 'final_conv')]), constant(g, 1)]),
    constant(g, 0.5),
  ]);
  return finishModel(g, ports, out, spec);
}

/** Multiply-adds per input pixel (separable convs are cheap: the 1×1s dominate), over SRVGGNetCompact's. */
function swiftMacs(s: SwiftSrganSpec): number {
  const f = s.numFeat;
  const sep = (k: number, cin: number, cout: number) => k * k * cin + cin * cout;
  let macs = sep(9, s.inChannels, f) + (2 * s.numBlocks + 1) * sep(3, f, f);
  let area = 1;
  for (let i = 0; 2 ** i < s.scale; i++) {
    macs += area * sep(3, f, 4 * f);
    area *= 4;
  }
  return macs + area * sep(9, f, s.outChannels);
}

export const swiftSrgan: Architecture<SwiftSrganSpec> = {
  kind: 'swiftsrgan',
  name: 'Swift-SRGAN',
  openModelDb: ['swift-srgan'],
  detect: (dict) => (looksLikeSwiftSrgan(dict) ? detectSwiftSrgan(dict) : undefined),
  describe: (s) => `Swift-SRGAN x${s.scale} (${s.numFeat} feat, ${s.numBlocks} blocks${channelsNote(s)})`,
  // An estimate from the layers (a plain conv stack, like the compact model it is measured against).
  tiling: (s) => cnnTiling(Math.max(0.1, Math.round((swiftMacs(s) / COMPACT_MACS) * 10) / 10)),
  build: (spec, dict, opts) => buildSwiftSrganOnnx(spec, dict, opts),
};
