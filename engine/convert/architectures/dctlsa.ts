/**
 * DCTLSA, the Densely Connected Transformer with Linear Self-Attention (Zeng et al. 2023; zengkun301/DCTLSA,
 * Apache-2.0): detection from a state dict and the ONNX graph.
 *
 * fea_conv, then six LSABs densely connected: LSAB k runs on the concatenation of fea_conv's output and the k−1
 * earlier LSAB outputs squeezed by a 1×1 conv (c1…c5, LeakyReLU 0.05); a 1×1 conv `c` (same activation) over all
 * six outputs, LR_conv plus the shallow features, and a one-step pixel-shuffle tail. An LSAB is two BasicLayers
 * of two blocks in 16×16 windows (the second shifted by 8, with no mask: upstream passes none). Each BasicLayer
 * reflect-pads its own input to the window multiple, LayerNorms the tokens and crops back, so the graph pads and
 * crops per BasicLayer too. A block has no norm and no residual around its attention: a local branch (BatchNorm,
 * 1×1, depth-wise 3×3, BatchNorm, 1×1, plus its input) feeds qkv, the attention is linear per window and head
 * (softmax of k over the window's tokens, then q·(kᵀv)), then proj plus the local branch, then x + MLP(x).
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { finishModel, imagePorts, scaleAndChannels } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { fitted } from '../graph/transformerCost.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';
import { TokenGraph } from '../graph/transformerGraph.js';
import { LAYER_NORM_EPS, type WindowGrid } from '../graph/windowAttention.js';

export interface DctlsaSpec {
  kind: 'dctlsa';
  inChannels: number;
  outChannels: number;
  scale: number;
  /** Feature channels (nf): 55 in the released model. */
  features: number;
  /** MLP hidden width over features (2 upstream). */
  mlpRatio: number;
}

/** DCTLSA's constants, never stored in a checkpoint: 16×16 windows, 5 heads, six LSABs of 2 × 2 blocks. */
const WINDOW = 16;
const HEADS = 5;
const MODULES = 6;
const LAYERS_PER_LSAB = 2;
const BLOCKS_PER_LAYER = 2;
const SLOPE = 0.05;
/** The released model (4x-dctlsa-pretrained): nf 55. */
const RELEASED_FEATURES = 55;

const layerPrefix = (m: number, l: number) => `B${m}.body.${l}.transformer_body.0`;

export function looksLikeDctlsa(dict: StateDict): boolean {
  const block = `${layerPrefix(1, 0)}.blocks.0.attn`;
  return (
    dict.has('fea_conv.weight') &&
    dict.has(`${block}.qkv.weight`) &&
    dict.has(`${block}.local.pointwise_prenorm_1.weight`) &&
    dict.has('c.0.weight') &&
    dict.has('LR_conv.weight') &&
    dict.has('upsampler.0.weight')
  );
}

export function detectDctlsa(dict: StateDict): DctlsaSpec {
  const get = (key: string): Tensor => {
    const t = dict.get(key);
    if (!t) throw new UnsupportedArchitectureError(`not a DCTLSA checkpoint: ${key} is missing`);
    return t;
  };
  const [features, inChannels] = get('fea_conv.weight').shape as [number, number];
  const modules = get('c.0.weight').shape[1]! / features;
  if (modules !== MODULES || !dict.has(`${layerPrefix(MODULES, 1)}.blocks.1.attn.qkv.weight`))
    throw new UnsupportedArchitectureError(
      `DCTLSA: c.0 joins ${modules} modules, but the network has exactly ${MODULES} LSABs (B1…B6)`,
    );
  if (features % HEADS !== 0)
    throw new UnsupportedArchitectureError(
      `DCTLSA: ${features} feature channels do not split into the ${HEADS} heads DCTLSA always has (checkpoints do not store the head count)`,
    );
  const up = get('upsampler.0.weight').shape[0]!;
  const tail = scaleAndChannels(up, inChannels);
  if (!tail) throw new UnsupportedArchitectureError(`DCTLSA: upsampler.0 gives ${up} channels, not channels × scale²`);
  return {
    kind: 'dctlsa',
    inChannels,
    outChannels: tail.outChannels,
    scale: tail.scale,
    features,
    mlpRatio: get(`${layerPrefix(1, 0)}.blocks.0.mlp.fc1.weight`).shape[0]! / features,
  };
}

export function buildDctlsaOnnx(
  dict: StateDict,
  spec: DctlsaSpec = detectDctlsa(dict),
  opts: BuildOptions = {},
): Uint8Array {
  const G = new TokenGraph('DCTLSA', dict, 'a DCTLSA checkpoint');
  const C = spec.features;
  const d = C / HEADS;
  const conv = (x: string, prefix: string, group?: number) => G.conv(x, prefix, G.get, { group });
  const lrelu = (x: string) => G.leakyRelu(x, SLOPE);

  /**
   * A 1×1 conv without bias after an eval-mode BatchNorm (LocalModule's prenorm order), folded: W·(x·s + t) =
   * (W·diag(s))·x + W·t with s = γ/√(σ²+ε), t = β − μ·s.
   */
  const prenormPointwise = (x: string, bn: string, prefix: string) => {
    const w = G.get(`${prefix}.weight`);
    const [out, inp] = w.shape as [number, number];
    const [gamma, beta, mean, variance] = ['weight', 'bias', 'running_mean', 'running_var'].map(
      (k) => G.get(`${bn}.${k}`).data,
    ) as [Float32Array, Float32Array, Float32Array, Float32Array];
    const weight = new Float32Array(out * inp);
    const bias = new Float32Array(out);
    for (let c = 0; c < inp; c++) {
      const s = gamma[c]! / Math.sqrt(variance[c]! + LAYER_NORM_EPS);
      const t = beta[c]! - mean[c]! * s;
      for (let o = 0; o < out; o++) {
        weight[o * inp + c] = w.data[o * inp + c]! * s;
        bias[o] = bias[o]! + w.data[o * inp + c]! * t;
      }
    }
    return G.g.conv(
      x,
      G.param(`${prefix}.weight_bn`, [out, inp, 1, 1], weight),
      G.param(`${prefix}.bias_bn`, [out], bias),
      [1, 1],
      [0, 0, 0, 0],
    );
  };

  /** One of qkv's three C×C parts as a Linear, times `factor` (q carries head_dim^−½). */
  const qkvPart = (x: string, prefix: string, i: number, factor: number) => {
    const w = G.get(`${prefix}.qkv.weight`);
    const b = G.get(`${prefix}.qkv.bias`);
    return G.linear(
      x,
      `${prefix}.qkv.${'qkv'[i]}`,
      { shape: [C, C], data: w.data.slice(i * C * C, (i + 1) * C * C).map((v) => v * factor) },
      { shape: [C], data: b.data.slice(i * C, (i + 1) * C).map((v) => v * factor) },
    );
  };

  /** The block's attention on an NHWC map (already rolled): local branch, linear window attention, plus local. */
  const attention = (x: string, prefix: string, grid: WindowGrid) => {
    const temp = G.toNchw(x);
    const l = `${prefix}.local`;
    let local = prenormPointwise(temp, `${l}.pointwise_prenorm_0`, `${l}.pointwise_conv_0`);
    local = G.conv(local, `${l}.depthwise_conv`, G.get, { bias: false, group: C });
    local = prenormPointwise(local, `${l}.pointwise_prenorm_1`, `${l}.pointwise_conv_1`);
    const localNhwc = G.toNhwc(G.add(local, temp));
    const win = G.windowPartition(localNhwc, grid);
    const q = G.splitHeads(qkvPart(win, prefix, 0, d ** -0.5), HEADS, C);
    const kT = G.node('Softmax', [G.splitHeads(qkvPart(win, prefix, 1, 1), HEADS, C, true)], { axis: attr.int(-1) });
    const v = G.splitHeads(qkvPart(win, prefix, 2, 1), HEADS, C);
    const context = G.node('MatMul', [kT, v]); // [B, nWin, heads, d, d]
    const out = G.dense(G.mergeHeads(G.node('MatMul', [q, context]), C), `${prefix}.proj`);
    return G.add(G.windowReverse(out, grid), localNhwc);
  };

  /** A BasicLayer on NCHW: reflect pad to the window, patch-embed LayerNorm, two blocks, crop back. */
  const basicLayer = (x: string, prefix: string) => {
    const padded = G.reflectPadToMultiple(x, WINDOW);
    let t = G.norm(G.toNhwc(padded.x), `${prefix}.patch_embed.norm`);
    const grid = G.grid(t, WINDOW, C);
    for (let b = 0; b < BLOCKS_PER_LAYER; b++) {
      const shift = b % 2 === 1 ? WINDOW / 2 : 0;
      const p = `${prefix}.blocks.${b}`;
      let y = attention(shift > 0 ? G.roll(t, -shift) : t, `${p}.attn`, grid);
      if (shift > 0) y = G.roll(y, shift);
      t = G.add(y, G.mlp(y, `${p}.mlp`, G.get));
    }
    return G.cropToScaled(G.toNchw(t), padded.h, padded.w, 1);
  };

  const ports = imagePorts(G.g, spec, opts.rgbPorts ?? false);
  const fea = conv(ports.input, 'fea_conv');
  let dense = fea;
  let input = fea;
  const outs: string[] = [];
  for (let m = 1; m <= MODULES; m++) {
    let y = input;
    for (let l = 0; l < LAYERS_PER_LSAB; l++) y = basicLayer(y, layerPrefix(m, l));
    outs.push(y);
    if (m < MODULES) {
      dense = G.concat([dense, y], 1);
      input = lrelu(conv(dense, `c${m}.0`));
    }
  }
  const body = lrelu(conv(G.concat(outs, 1), 'c.0'));
  let out = conv(G.add(conv(body, 'LR_conv'), fea), 'upsampler.0');
  if (spec.scale > 1)
    out = G.node('DepthToSpace', [out], { blocksize: attr.int(spec.scale), mode: attr.string('CRD') });
  return finishModel(G.g, ports, out, spec);
}

/**
 * The tile planner's cost from layer MACs per pixel: per block the local branch (two 1×1, a depth-wise 3×3), qkv
 * and proj, the linear attention (kᵀv and q·ctx, d·C each) and the MLP; the dense 1×1 convs, the 3×3 convs and
 * the tail. The released nf 55 has 0.74× SRVGGNetCompact's MACs but measured 2.9× its time (11.6 s per 256² tile
 * against 4.0 s, `CRISP_BENCH_ARCH=DCTLSA,CRAFT npm run bench -- --only arch`, 2026-11-27, load ~8: 24 small
 * blocks of transposes, per-layer pads and crops), so the MAC ratio is scaled by that one run's 3.9.
 */
const DCTLSA_FIT = { macs: 3.9, perScore: 0 };

function dctlsaRelativeCost(s: DctlsaSpec): number {
  const c = s.features;
  const block = 2 * c * c + 9 * c + 4 * c * c + 2 * (c / HEADS) * c + 2 * c * c * s.mlpRatio;
  const blocks = MODULES * LAYERS_PER_LSAB * BLOCKS_PER_LAYER;
  let dense = c * MODULES * c;
  for (let k = 2; k <= MODULES; k++) dense += k * c * c;
  const macs = 9 * s.inChannels * c + blocks * block + dense + 9 * c * c + 9 * c * s.outChannels * s.scale ** 2;
  return fitted(macs, 0, DCTLSA_FIT);
}

export const dctlsa: Architecture<DctlsaSpec> = {
  kind: 'dctlsa',
  name: 'DCTLSA',
  openModelDb: ['dctlsa'],
  detect: (dict) => (looksLikeDctlsa(dict) ? detectDctlsa(dict) : undefined),
  describe: (s) =>
    `DCTLSA x${s.scale} (${s.features === RELEASED_FEATURES ? 'released ' : ''}${s.features} feat, ${MODULES} LSAB, ${HEADS} heads, window ${WINDOW}${s.mlpRatio === 2 ? '' : `, mlp ${s.mlpRatio}`}${channelsNote(s)})`,
  // Every BasicLayer reflect-pads to the window (spandrel's size requirement: at least 16).
  tiling: (s) => ({ window: WINDOW, minSide: WINDOW, relativeCost: dctlsaRelativeCost(s) }),
  build: (spec, dict, opts) => buildDctlsaOnnx(dict, spec, opts),
};
