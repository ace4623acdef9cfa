/**
 * CRAFT, the Cross-Refinement Adaptive Feature modulation Transformer (Li et al. 2023; AVC2-UESTC/CRAFT-SR, MIT):
 * detection from a state dict and the ONNX graph.
 *
 * conv_first, residual groups (RCRFG), a channel LayerNorm, conv_after_body plus the shallow features, and a
 * one-step pixel-shuffle tail. Each group repeats, per step: two SRWA blocks on the map as tokens ("low"; DAT's
 * rectangle-window attention, graph/rectWindowAttention.ts, with the network's offsets buffers and, in the
 * shifted second block, no mask, as upstream; plus a depth-wise conv of v, proj and an MLP), an HFERB on the map
 * itself ("high": a 3×3 conv on half the channels, a 3×3 max-pool and 1×1 conv on the other half, GELU, a 1×1 conv,
 * plus its input), and an HFB joining them (Restormer's transposed attention with queries from "high" and keys
 * and values from the LayerNormed "low", then the gated depth-wise FFN); then a 3×3 conv and the group's residual.
 * The network mirror-pads its input (the edge row included) to the next multiple of its 16-pixel window, a whole
 * window more when the side already is one, and the graph does the same, then crops back.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { finishModel, imagePorts, RGB_MEAN } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { rectWindowBranches, type RectWindowMasks } from '../graph/rectWindowAttention.js';
import { fitted } from '../graph/transformerCost.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';
import { TokenGraph } from '../graph/transformerGraph.js';
import { countSeq, denormalizeOutput, normalizeInput } from '../graph/windowAttention.js';

export interface CraftSpec {
  kind: 'craft';
  inChannels: number;
  outChannels: number;
  scale: number;
  embedDim: number;
  /** Steps per residual group (each: two SRWA blocks, an HFERB and an HFB). */
  depths: number[];
  heads: number[];
  /** The rectangle window H_sp×W_sp of the first branch (the second uses W_sp×H_sp). */
  splitSize: [number, number];
  mlpRatio: number;
  qkvBias: boolean;
  resiConnection: '1conv' | 'identity';
}

/** CRAFT's padding multiple, a constructor argument never stored (16 in every released model and in spandrel). */
const WINDOW = 16;
const ARCH = 'CRAFT';
/** F.normalize's floor on the norm. */
const NORMALIZE_EPS = 1e-12;
/** The published configuration (4x-craft-pretrain): 48 wide, 4 groups of 2 steps, 6 heads, 4×16 windows. */
const RELEASED = { embedDim: 48, groups: 4, depth: 2, heads: 6, split: [4, 16] };

const group = (i: number) => `layers.${i}.residual_group`;

export function looksLikeCraft(dict: StateDict): boolean {
  return dict.has('conv_first.weight') && dict.has(`${group(0)}.hf_blocks.0.attn.temperature`);
}

export function detectCraft(dict: StateDict): CraftSpec {
  const get = (key: string): Tensor => {
    const t = dict.get(key);
    if (!t) throw new UnsupportedArchitectureError(`not a CRAFT checkpoint: ${key} is missing`);
    return t;
  };
  const [embedDim, inChannels] = get('conv_first.weight').shape as [number, number];
  const groups = countSeq(dict, 'layers', 'residual_group.hf_blocks.0.attn.temperature');
  const depths = Array.from({ length: groups }, (_, i) => countSeq(dict, `${group(i)}.hf_blocks`, 'attn.temperature'));
  const heads = Array.from({ length: groups }, (_, i) => get(`${group(i)}.hf_blocks.0.attn.temperature`).shape[0]!);
  // biases_h holds every offset (dh, dw) of the first branch's window; the last row is (H_sp − 1, W_sp − 1).
  const offsets = get('biases_h');
  const rows = offsets.shape[0]!;
  const splitSize: [number, number] = [offsets.data[2 * rows - 2]! + 1, offsets.data[2 * rows - 1]! + 1];
  const [a, b] = splitSize;
  if ((2 * a - 1) * (2 * b - 1) !== rows || WINDOW % a !== 0 || WINDOW % b !== 0)
    throw new UnsupportedArchitectureError(
      `CRAFT with ${a}×${b} windows is not supported: they must tile its 16-pixel padding (sides dividing 16)`,
    );
  if (heads.some((h) => h % 2 !== 0 || embedDim % h !== 0))
    throw new UnsupportedArchitectureError(
      `CRAFT: ${heads.join('/')} heads do not split ${embedDim} channels into two window branches`,
    );
  const up = get('upsample.0.weight').shape[0]!;
  const scale = Math.round(Math.sqrt(up / inChannels));
  if (scale * scale * inChannels !== up)
    throw new UnsupportedArchitectureError(`CRAFT: upsample.0 gives ${up} channels, not ${inChannels} × scale²`);
  return {
    kind: 'craft',
    inChannels,
    outChannels: inChannels,
    scale,
    embedDim,
    depths,
    heads,
    splitSize,
    mlpRatio: get(`${group(0)}.srwa_blocks.0.mlp.fc1.weight`).shape[0]! / embedDim,
    qkvBias: dict.has(`${group(0)}.srwa_blocks.0.qkv.bias`),
    resiConnection: dict.has('conv_after_body.weight') ? '1conv' : 'identity',
  };
}

function isReleased(s: CraftSpec): boolean {
  return (
    s.embedDim === RELEASED.embedDim &&
    s.depths.length === RELEASED.groups &&
    s.depths.every((d) => d === RELEASED.depth) &&
    s.heads.every((h) => h === RELEASED.heads) &&
    s.splitSize[0] === RELEASED.split[0] &&
    s.splitSize[1] === RELEASED.split[1]
  );
}

export function buildCraftOnnx(
  dict: StateDict,
  spec: CraftSpec = detectCraft(dict),
  opts: BuildOptions = {},
): Uint8Array {
  // SRWA's qkv weights are reordered per branch (rectWindowBranches); everything else is read as stored.
  const weights: StateDict = new Map(dict);
  const G = new TokenGraph(ARCH, weights, 'a CRAFT checkpoint');
  const C = spec.embedDim;
  const masks: RectWindowMasks = [undefined, undefined];
  const conv = (x: string, prefix: string, o: { group?: number; bias?: boolean } = {}) => G.conv(x, prefix, G.get, o);
  /** Restormer's WithBias LayerNorm over the channels of an NCHW map. */
  const channelNorm = (x: string, prefix: string) => G.toNchw(G.norm(G.toNhwc(x), prefix));
  const normalize = (x: string) =>
    G.node('Div', [
      x,
      G.node('Max', [
        G.node('ReduceL2', [x], { axes: attr.ints([-1]), keepdims: attr.int(1) }),
        G.scalar(NORMALIZE_EPS),
      ]),
    ]);

  /** An SRWA block on NHWC tokens. */
  const srwa = (x: string, p: string, heads: number, shifted: boolean) => {
    const { attended, v } = rectWindowBranches(G, weights, dict, G.norm(x, `${p}.norm1`), p, {
      embedDim: C,
      heads,
      splitSize: spec.splitSize,
      shifted,
      masks,
      arch: ARCH,
      masked: false,
      offsets: ['biases_h', 'biases_v'],
    });
    const local = G.toNhwc(conv(G.toNchw(v), `${p}.get_v`, { group: C }));
    const y = G.add(x, G.dense(G.add(attended, local), `${p}.proj`));
    return G.add(y, G.mlp(G.norm(y, `${p}.norm2`), `${p}.mlp`, G.get));
  };

  /** The HFERB on NCHW: local 3×3 conv on one half, max-pool + 1×1 on the other, GELU, 1×1, residual. */
  const hferb = (x: string, p: string) => {
    const mid = Math.floor(C / 2);
    const [lo, hi] = G.split(x, 1, [mid, C - mid]);
    const lfe = G.gelu(conv(lo!, `${p}.conv`));
    const pooled = G.node('MaxPool', [hi!], {
      kernel_shape: attr.ints([3, 3]),
      pads: attr.ints([1, 1, 1, 1]),
      strides: attr.ints([1, 1]),
    });
    const hfe = G.gelu(conv(pooled, `${p}.fc`));
    return G.add(x, conv(G.concat([lfe, hfe], 1), `${p}.last_fc`));
  };

  /** The HFB on NCHW maps: transposed attention (q from high, k and v from the normed low), then the gated FFN. */
  const hfb = (low: string, high: string, p: string, heads: number) => {
    const a = `${p}.attn`;
    const q = conv(conv(high, `${a}.q`, { bias: false }), `${a}.q_dwconv`, { group: C, bias: false });
    const kv = conv(conv(channelNorm(low, `${p}.norm1.body`), `${a}.kv`, { bias: false }), `${a}.kv_dwconv`, {
      group: 2 * C,
      bias: false,
    });
    const perHead = (t: string) => G.reshape(t, [0, heads, C / heads, -1]);
    const [k, v] = G.split(kv, 1, [C, C]).map(perHead);
    const scores = G.mul(
      G.node('MatMul', [normalize(perHead(q)), G.transpose(normalize(k!), [0, 1, 3, 2])]),
      G.weightOf(`${a}.temperature`),
    );
    const out = G.node('MatMul', [G.node('Softmax', [scores], { axis: attr.int(-1) }), v!]);
    const x = G.add(low, conv(G.reshape(out, G.node('Shape', [low])), `${a}.project_out`, { bias: false }));
    return G.add(x, G.gatedDwFfn(channelNorm(x, `${p}.norm2.body`), `${p}.ffn`));
  };

  const ports = imagePorts(G.g, spec, opts.rgbPorts ?? false);
  const [h, w] = [G.dim(ports.input, 2), G.dim(ports.input, 3)];
  // (n // 16 + 1) · 16: always at least one row more, a whole window when n already is a multiple.
  const target = (n: string) => G.mul(G.add(G.node('Div', [n, G.i64([WINDOW])]), G.i64([1])), G.i64([WINDOW]));
  const padded = G.mirrorPad(G.mirrorPad(ports.input, 2, target(h)), 3, target(w));
  const mean = spec.inChannels === 3 ? RGB_MEAN : null;
  const shallow = conv(normalizeInput(G, padded, mean, 1), 'conv_first');
  let body = shallow;
  spec.depths.forEach((depth, i) => {
    let x = body;
    for (let s = 0; s < depth; s++) {
      let low = G.toNhwc(x);
      for (const k of [2 * s, 2 * s + 1]) low = srwa(low, `${group(i)}.srwa_blocks.${k}`, spec.heads[i]!, k % 2 === 1);
      x = hfb(G.toNchw(low), hferb(x, `${group(i)}.hfer_blocks.${s}`), `${group(i)}.hf_blocks.${s}`, spec.heads[i]!);
    }
    body = G.add(conv(x, `layers.${i}.conv`), body);
  });
  let deep = channelNorm(body, 'norm.body');
  if (spec.resiConnection === '1conv') deep = conv(deep, 'conv_after_body');
  let out = conv(G.add(deep, shallow), 'upsample.0');
  if (spec.scale > 1)
    out = G.node('DepthToSpace', [out], { blocksize: attr.int(spec.scale), mode: attr.string('CRD') });
  return finishModel(G.g, ports, G.cropToScaled(denormalizeOutput(G, out, mean, 1), h, w, spec.scale), spec);
}

/**
 * The tile planner's cost from layer MACs per pixel: per step two SRWA blocks (qkv, proj, attention over the
 * window, the v conv, the MLP), the HFERB and the HFB (q, kv and project_out 1×1s with their depth-wise 3×3s,
 * attention over the channels, the gated FFN). The released CRAFT has 0.72× SRVGGNetCompact's MACs but measured
 * 4.1× its time (16.6 s per 256² tile against 4.0 s, `CRISP_BENCH_ARCH=DCTLSA,CRAFT npm run bench -- --only arch`,
 * 2026-11-27, load ~8: a narrow network of many window transposes), so the MAC ratio is scaled by that run's 5.7.
 */
const CRAFT_FIT = { macs: 5.7, perScore: 0 };

function craftRelativeCost(s: CraftSpec): number {
  const c = s.embedDim;
  const keys = s.splitSize[0] * s.splitSize[1];
  const srwa = 4 * c * c + 2 * keys * c + 9 * c + 2 * c * c * s.mlpRatio;
  const mid = Math.floor(c / 2);
  const hferb = 9 * mid * mid + mid * mid + c * c;
  const hidden = Math.floor(c * 2.66);
  const hfb = 3 * c * c + 9 * 3 * c + 2 * c * c + c * c + 2 * c * hidden + 9 * 2 * hidden + hidden * c;
  let macs = 9 * s.inChannels * c + 9 * c * s.inChannels * s.scale ** 2;
  if (s.resiConnection === '1conv') macs += 9 * c * c;
  for (const d of s.depths) macs += d * (2 * srwa + hferb + hfb) + 9 * c * c;
  return fitted(macs, 0, CRAFT_FIT);
}

export const craft: Architecture<CraftSpec> = {
  kind: 'craft',
  name: 'CRAFT',
  openModelDb: ['craft'],
  detect: (dict) => (looksLikeCraft(dict) ? detectCraft(dict) : undefined),
  describe: (s) =>
    `CRAFT x${s.scale} (${isReleased(s) ? 'released ' : ''}${s.embedDim} dim, ${s.depths.length} group${s.depths.length === 1 ? '' : 's'} of ${s.depths.join('/')}, heads ${s.heads.join('/')}, window ${s.splitSize[0]}×${s.splitSize[1]}, mlp ${s.mlpRatio}${s.qkvBias ? '' : ', no qkv bias'}${s.resiConnection === '1conv' ? '' : ', no residual conv'}${channelsNote(s)})`,
  // The graph pads to the next multiple of 16 itself (and a window more on multiples, as upstream).
  tiling: (s) => ({ window: WINDOW, minSide: WINDOW, relativeCost: craftRelativeCost(s) }),
  build: (spec, dict, opts) => buildCraftOnnx(dict, spec, opts),
};
