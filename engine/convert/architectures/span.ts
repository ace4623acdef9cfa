/**
 * SPAN (Swift Parameter-free Attention Network, Wan et al. 2024; hongyuanyu/SPAN): detection from a state
 * dict and the ONNX graph.
 *
 * Each Conv3XC layer is trained as 1×1 → 3×3 → 1×1 convolutions plus a 1×1 skip, and runs as the single 3×3
 * convolution they compose to. Checkpoints also store that fused `eval_conv`, but as of whenever training last
 * refreshed it; inference recomputes it from the branch weights, and so does this converter (in float64).
 */
import {
  channelsNote,
  cnnTiling,
  UnsupportedArchitectureError,
  type Architecture,
  type BuildOptions,
} from './architecture.js';
import {
  constant,
  convFrom,
  convWith,
  finishModel,
  GraphBuilder,
  imagePorts,
  pixelShuffle,
  RGB_MEAN,
  scaleAndChannels,
  silu,
  Weights,
} from '../graph/graphOps.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

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

const SPAB_BLOCKS = 6;
const IMG_RANGE = 255;

export function looksLikeSpan(dict: StateDict): boolean {
  return [
    'conv_1.sk.weight',
    'block_1.c1_r.sk.weight',
    'conv_cat.weight',
    'conv_2.sk.weight',
    'upsampler.0.weight',
  ].every((k) => dict.has(k));
}

export function detectSpan(dict: StateDict): SpanSpec {
  const w = new Weights(dict, 'SPAN');
  const sk = w.get('conv_1.sk.weight').shape;
  const numFeat = sk[0]!;
  const inChannels = sk[1]!;
  for (let b = 1; b <= SPAB_BLOCKS; b++) w.get(`block_${b}.c3_r.sk.weight`);
  const up = w.get('upsampler.0.weight').shape[0]!;
  const sc = scaleAndChannels(up, inChannels);
  if (!sc) throw new UnsupportedArchitectureError(`SPAN upsampler has ${up} outputs: no integer scale`);
  const norm = !dict.has('no_norm');
  if (norm && inChannels !== 3) {
    throw new UnsupportedArchitectureError(
      `SPAN with ${inChannels} input channels and RGB-mean normalisation cannot run (the mean has 3 channels)`,
    );
  }
  return { kind: 'span', inChannels, outChannels: sc.outChannels, numFeat, scale: sc.scale, norm };
}

const zeros = (n: number): Tensor => ({ shape: [n], data: new Float32Array(n) });

/** The 3×3 convolution a Conv3XC's branches compose to (bias included), plus its 1×1 skip at the centre tap. */
export function fuseConv3xc(w: Weights, prefix: string): { weight: Tensor; bias: Tensor } {
  const w1 = w.get(`${prefix}.conv.0.weight`);
  const w2 = w.get(`${prefix}.conv.1.weight`);
  const w3 = w.get(`${prefix}.conv.2.weight`);
  const sk = w.get(`${prefix}.sk.weight`);
  const [n1, cin] = w1.shape as [number, number];
  const [m2, n2, kh, kw] = w2.shape as [number, number, number, number];
  const [cout, m3] = w3.shape as [number, number];
  if (n2 !== n1 || m3 !== m2 || kh !== 3 || kw !== 3 || sk.shape[0] !== cout || sk.shape[1] !== cin) {
    throw new UnsupportedArchitectureError(`SPAN ${prefix}: branch shapes do not compose to a 3×3 convolution`);
  }
  const b1 = w.dict.get(`${prefix}.conv.0.bias`) ?? zeros(n1);
  const b2 = w.dict.get(`${prefix}.conv.1.bias`) ?? zeros(m2);
  const b3 = w.dict.get(`${prefix}.conv.2.bias`) ?? zeros(cout);
  const skb = w.dict.get(`${prefix}.sk.bias`) ?? zeros(cout);
  const K = 9;
  // a[m, i, k] = Σ_n w2[m, n, k] · w1[n, i]
  const a = new Float64Array(m2 * cin * K);
  for (let m = 0; m < m2; m++)
    for (let n = 0; n < n1; n++)
      for (let k = 0; k < K; k++) {
        const v = w2.data[(m * n1 + n) * K + k]!;
        if (v === 0) continue;
        for (let i = 0; i < cin; i++) a[(m * cin + i) * K + k]! += v * w1.data[n * cin + i]!;
      }
  // Bias through the 3×3 (b1 reaches every tap: training pads before the first 1×1) and the last 1×1.
  const mid = new Float64Array(m2);
  for (let m = 0; m < m2; m++) {
    let s = b2.data[m]!;
    for (let n = 0; n < n1; n++) for (let k = 0; k < K; k++) s += w2.data[(m * n1 + n) * K + k]! * b1.data[n]!;
    mid[m] = s;
  }
  const weight = new Float32Array(cout * cin * K);
  const bias = new Float32Array(cout);
  for (let o = 0; o < cout; o++) {
    let bs = b3.data[o]! + skb.data[o]!;
    for (let m = 0; m < m2; m++) bs += w3.data[o * m2 + m]! * mid[m]!;
    bias[o] = bs;
    for (let i = 0; i < cin; i++)
      for (let k = 0; k < K; k++) {
        let s = k === 4 ? sk.data[o * cin + i]! : 0;
        for (let m = 0; m < m2; m++) s += w3.data[o * m2 + m]! * a[(m * cin + i) * K + k]!;
        weight[(o * cin + i) * K + k] = s;
      }
  }
  return { weight: { shape: [cout, cin, 3, 3], data: weight }, bias: { shape: [cout], data: bias } };
}

export function buildSpanOnnx(spec: SpanSpec, dict: StateDict, opts: BuildOptions = {}): Uint8Array {
  const w = new Weights(dict, 'SPAN');
  const g = new GraphBuilder('SPAN');
  const conv3xc = (x: string, prefix: string): string => {
    const f = fuseConv3xc(w, prefix);
    return convWith(g, x, prefix, f.weight, f.bias);
  };
  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  let x = ports.input;
  if (spec.norm) {
    x = g.node('Mul', [g.node('Sub', [x, constant(g, RGB_MEAN, [1, 3, 1, 1])]), constant(g, IMG_RANGE)]);
  }
  const feature = conv3xc(x, 'conv_1');
  const half = constant(g, 0.5);
  const spab = (input: string, b: number): { out: string; out1: string } => {
    const out1 = conv3xc(input, `block_${b}.c1_r`);
    const out2 = conv3xc(silu(g, out1), `block_${b}.c2_r`);
    const out3 = conv3xc(silu(g, out2), `block_${b}.c3_r`);
    const att = g.node('Sub', [g.node('Sigmoid', [out3]), half]);
    return { out: g.node('Mul', [g.node('Add', [out3, input]), att]), out1 };
  };
  const b1 = spab(feature, 1);
  let cur = b1.out;
  let b6out1 = '';
  for (let b = 2; b <= SPAB_BLOCKS; b++) {
    const r = spab(cur, b);
    cur = r.out;
    if (b === SPAB_BLOCKS) b6out1 = r.out1;
  }
  const b6 = conv3xc(cur, 'conv_2');
  const cat = g.node('Concat', [feature, b6, b1.out, b6out1], { axis: { kind: 'int', value: 1 } });
  const up = convFrom(g, w, convFrom(g, w, cat, 'conv_cat'), 'upsampler.0');
  return finishModel(g, ports, pixelShuffle(g, up, spec.scale), spec);
}

export const span: Architecture<SpanSpec> = {
  kind: 'span',
  name: 'SPAN',
  openModelDb: ['span'],
  detect: (dict) => (looksLikeSpan(dict) ? detectSpan(dict) : undefined),
  describe: (s) => `SPAN x${s.scale} (${s.numFeat} feat${s.norm ? '' : ', no norm'}${channelsNote(s)})`,
  tiling: () => cnnTiling(0.35),
  build: (spec, dict, opts) => buildSpanOnnx(spec, dict, opts),
};
