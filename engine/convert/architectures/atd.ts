/**
 * ATD, the Adaptive Token Dictionary transformer (Zhang et al. 2024; LabShuHangGU/Adaptive-Token-Dictionary,
 * Apache-2.0): detection from a state dict and the ONNX graph, for ATD and ATD-light alike.
 *
 * SwinIR's outline (conv_first, patch-embed LayerNorm, residual groups with a 1conv/3conv residual, LayerNorm,
 * conv_after_body, the SwinIR family's tails). Each group holds a learned token dictionary (`td`, num_tokens
 * entries) and layers that add three attentions to their input, all fed by one LayerNorm:
 * - window attention on a shared qkv projection (plain and shifted windows in turn, Swin's bias and mask);
 * - ATD-CA: cosine similarity of reduced queries (wq) against the dictionary's reduced keys (wk), times a learned
 *   per-entry temperature 1 + clamp(scale, 0, 1)·ln(num_tokens), softmax over the entries, then the entries'
 *   values (wv);
 * - AC-MSA: each token's category is its most similar entry (ArgMax); tokens sorted by category (TopK over the
 *   unique key category·n + index, i.e. a stable sort: see below), cut into groups of category_size (the last
 *   group filled with the sorted sequence's end, reversed: a Gather whose index folds back at n), attention
 *   within each group scaled by exp(min(logit_scale, ln 100)), and the result put back in raster order (Gather
 *   with the inverse permutation, made by ScatterElements).
 * Then a ConvFFN (fc1, GELU, plus a depth-wise conv + GELU branch, fc2), and in every layer but a group's last
 * the dictionary is refined from the tokens: InstanceNorm over the similarity map's token axis per entry,
 * softmax, and a learned sigmoid mix with the old entries.
 *
 * Two properties follow from the architecture, not from the conversion. Categorisation and dictionary refinement
 * see the whole (tile) image, so a picture run in tiles differs slightly from one run whole, as in every runner
 * of ATD. And upstream sorts with torch.sort(stable=False), which leaves the order of tokens of one category to
 * the backend; that order decides which of them fall into which group at a group boundary, so PyTorch's own
 * backends disagree there. The graph keeps ties in raster order (a stable sort); the test reference does too.
 *
 * category_size is not stored in a checkpoint: spandrel's rule is used (128 for the light configuration,
 * 256 otherwise), as every released model follows it.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { finishModel, imagePorts, RGB_MEAN } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { fitted, resiMacs, tailMacs } from '../graph/transformerCost.js';
import type { StateDict } from '../checkpoint/stateDict.js';
import { detectUpsampler, TokenGraph, type ResiConnection, type UpsamplerKind } from '../graph/transformerGraph.js';
import {
  countSeq,
  denormalizeOutput,
  normalizeInput,
  relativePositionIndex,
  windowFromTable,
  type WindowGrid,
} from '../graph/windowAttention.js';

export interface AtdSpec {
  kind: 'atd';
  /** ATD or ATD-light when the widths are the published ones; 'ATD' otherwise. */
  variant: string;
  upsampler: UpsamplerKind;
  inChannels: number;
  outChannels: number;
  scale: number;
  embedDim: number;
  depths: number[];
  numHeads: number[];
  windowSize: number;
  /** Tokens per AC-MSA group (not stored in checkpoints: spandrel's rule). */
  categorySize: number;
  /** Entries of each group's token dictionary. */
  numTokens: number;
  /** Width of ATD-CA's reduced queries and keys. */
  reducedDim: number;
  convffnKernel: number;
  mlpRatio: number;
  qkvBias: boolean;
  resiConnection: ResiConnection;
  /** False with the `no_norm` marker: no DIV2K mean shift. */
  norm: boolean;
}

/** torch.nn.InstanceNorm1d's default epsilon. */
const INSTANCE_NORM_EPS = 1e-5;
/** F.normalize's floor on the norm. */
const NORMALIZE_EPS = 1e-12;
const LAYER0 = 'layers.0.residual_group.layers.0';

export function looksLikeAtd(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') &&
    dict.has('layers.0.residual_group.td') &&
    dict.has(`${LAYER0}.attn_atd.wq.weight`) &&
    dict.has(`${LAYER0}.attn_win.relative_position_bias_table`)
  );
}

export function detectAtd(dict: StateDict): AtdSpec {
  const g = (key: string) => {
    const t = dict.get(key);
    if (!t) throw new UnsupportedArchitectureError(`not an ATD checkpoint: ${key} is missing`);
    return t;
  };
  if (dict.has('absolute_pos_embed'))
    throw new UnsupportedArchitectureError(
      'this ATD checkpoint uses an absolute position embedding (a fixed input size); that variant is not supported',
    );
  const [embedDim, inChannels] = g('conv_first.weight').shape as [number, number];
  const windowSize = windowFromTable(g(`${LAYER0}.attn_win.relative_position_bias_table`), 'ATD');
  const index = dict.get('relative_position_index_SA');
  if (index && index.shape[0] !== windowSize ** 2)
    throw new UnsupportedArchitectureError(
      `ATD: relative_position_index_SA is ${index.shape[0]} tokens but the bias table is for a ${windowSize}² window`,
    );
  const groups = countSeq(dict, 'layers', 'residual_group.td');
  const depths: number[] = [];
  const numHeads: number[] = [];
  for (let i = 0; i < groups; i++) {
    const depth = countSeq(dict, `layers.${i}.residual_group.layers`, 'norm1.weight');
    const heads = g(`layers.${i}.residual_group.layers.0.attn_win.relative_position_bias_table`).shape[1]!;
    if (embedDim % heads !== 0)
      throw new UnsupportedArchitectureError(`ATD: ${heads} heads do not divide ${embedDim} channels`);
    depths.push(depth);
    numHeads.push(heads);
  }
  const { kind: upsampler, scale } = detectUpsampler(dict, inChannels, 'ATD');
  const outChannels =
    upsampler === 'pixelshuffledirect'
      ? g('upsample.0.weight').shape[0]! / scale ** 2
      : g('conv_last.weight').shape[0]!;
  const light = upsampler === 'pixelshuffledirect' && embedDim === 48;
  const spec: AtdSpec = {
    kind: 'atd',
    variant: 'ATD',
    upsampler,
    inChannels,
    outChannels,
    scale,
    embedDim,
    depths,
    numHeads,
    windowSize,
    categorySize: light ? 128 : 256,
    numTokens: g(`${LAYER0}.attn_atd.scale`).shape[0]!,
    reducedDim: g(`${LAYER0}.attn_atd.wq.weight`).shape[0]!,
    convffnKernel: g(`${LAYER0}.convffn.dwconv.depthwise_conv.0.weight`).shape[2]!,
    mlpRatio: g(`${LAYER0}.convffn.fc1.weight`).shape[0]! / embedDim,
    qkvBias: dict.has(`${LAYER0}.wqkv.bias`),
    resiConnection: dict.has('layers.0.conv.weight') ? '1conv' : '3conv',
    norm: !dict.has('no_norm'),
  };
  spec.variant = atdVariant(spec);
  return spec;
}

/** The published configurations: ATD (210 wide, 6×6 layers, 128 entries) and ATD-light (48, 4×6, 64). */
function atdVariant(s: AtdSpec): string {
  const six = s.depths.every((d) => d === 6);
  if (s.embedDim === 48 && s.upsampler === 'pixelshuffledirect' && six && s.depths.length === 4) return 'ATD-light';
  return 'ATD';
}

/** float32 arithmetic as torch does it on float32 tensors (constants folded at conversion time). */
const f32 = Math.fround;

export function buildAtdOnnx(dict: StateDict, spec: AtdSpec = detectAtd(dict), opts: BuildOptions = {}): Uint8Array {
  const G = new TokenGraph('ATD', dict, 'an ATD checkpoint');
  const C = spec.embedDim;
  const ws = spec.windowSize;
  const shift = Math.floor(ws / 2);
  const index = relativePositionIndex(ws);
  const i64Scalar = (v: number) => G.node('Squeeze', [G.i64([v]), G.i64([0])]);
  const range = (n: string) => G.node('Range', [i64Scalar(0), G.node('Squeeze', [n, G.i64([0])]), i64Scalar(1)]);
  // [b, n, C] ↔ [b, H, W, C] (H and W as int64 [1] of the padded map).
  let hw: { h: string; w: string } = { h: '', w: '' };
  const flat = (x: string, c: number) => G.reshape(x, [0, -1, c]);
  const map = (x: string, c: number) => G.reshape(x, G.concat([G.i64([0]), hw.h, hw.w, G.i64([c])], 0));
  const normalize = (x: string) =>
    G.node('Div', [
      x,
      G.node('Max', [
        G.node('ReduceL2', [x], { axes: attr.ints([-1]), keepdims: attr.int(1) }),
        G.scalar(NORMALIZE_EPS),
      ]),
    ]);

  /** ATD's padding (TokenGraph.mirrorPad) up to the window multiple. */
  const symmetricPad = (x: string, axis: number): { x: string; size: string } => {
    const n = G.dim(x, axis);
    const m = G.i64([ws]);
    return { x: G.mirrorPad(x, axis, G.mul(G.node('Div', [G.add(n, G.i64([ws - 1])), m]), m)), size: n };
  };

  /** ATD-CA: [b, n, C] tokens against the dictionary [b|1, m, C]; returns the result and the similarity map. */
  const atdCa = (x: string, td: string, p: string): { out: string; sim: string } => {
    const scale = G.get(`${p}.scale`).data;
    const ln = f32(Math.log(spec.numTokens));
    const temperature = Array.from(scale, (s) => f32(1 + f32(Math.min(Math.max(s, 0), 1) * ln)));
    const q = normalize(G.dense(x, `${p}.wq`));
    const k = normalize(G.dense(td, `${p}.wk`));
    const scores = G.mul(G.node('MatMul', [q, G.transpose(k, [0, 2, 1])]), G.f32(temperature, [spec.numTokens]));
    const sim = G.node('Softmax', [scores], { axis: attr.int(-1) });
    return { out: G.node('MatMul', [sim, G.dense(td, `${p}.wv`)]), sim };
  };

  /** AC-MSA on the shared qkv [b, n, 3C], grouped by the similarity map's ArgMax. */
  const acMsa = (qkv: string, sim: string, p: string, heads: number): string => {
    const n = G.dim(qkv, 1);
    const category = G.node('ArgMax', [sim], { axis: attr.int(-1), keepdims: attr.int(0) }); // [b, n]
    const position = range(n);
    // Unique keys category·n + index: TopK's ascending order is then the stable sort, whatever its tie rule.
    const key = G.add(G.mul(category, n), position);
    const [sorted] = G.g.nodeOutputs('TopK', [key, n], 2, {
      axis: attr.int(-1),
      largest: attr.int(0),
      sorted: attr.int(1),
    });
    const order = G.node('Mod', [sorted!, n]); // [b, n]: the raster index of each sorted token
    const gs = G.node('Min', [n, G.i64([spec.categorySize])]);
    const total = G.mul(G.node('Div', [G.node('Sub', [G.add(n, gs), G.i64([1])]), gs]), gs);
    // Position j of the padded sequence reads sorted token min(j, 2n−1−j): the end of the sequence, reversed.
    const j = range(total);
    const fold = G.node('Min', [j, G.node('Sub', [G.node('Sub', [G.mul(n, G.i64([2])), G.i64([1])]), j])]);
    const gathered = G.node(
      'GatherND',
      [qkv, G.node('Unsqueeze', [G.node('Gather', [order, fold], { axis: attr.int(1) }), G.i64([-1])])],
      {
        batch_dims: attr.int(1),
      },
    );
    const grouped = G.reshape(gathered, G.concat([G.i64([0, -1]), gs, G.i64([3 * C])], 0)); // [b, ng, gs, 3C]
    const [q, k, v] = G.split(grouped, 3, [C, C, C]);
    const logit = G.get(`${p}.logit_scale`).data[0]!;
    const factor = f32(Math.exp(Math.min(logit, f32(Math.log(1 / 0.01)))));
    const o = G.attention(
      G.splitHeads(G.mul(q!, G.scalar(factor)), heads, C),
      G.splitHeads(k!, heads, C, true),
      G.splitHeads(v!, heads, C),
      null,
      null,
    );
    const y = G.slice(flat(G.mergeHeads(o, C), C), G.i64([0]), n, [1]); // [b, n, C] in sorted order
    // Back to raster order: the inverse permutation (inverse[order[i]] = i), then a batched Gather.
    const zeros = G.mul(order, G.i64([0]));
    const inverse = G.node('ScatterElements', [zeros, order, G.add(zeros, position)], { axis: attr.int(1) });
    const raster = G.node('GatherND', [y, G.node('Unsqueeze', [inverse, G.i64([-1])])], { batch_dims: attr.int(1) });
    return G.dense(raster, `${p}.proj`);
  };

  /** Window attention on the shared qkv map [b, H, W, 3C], back as [b, n, C]. */
  const windowMsa = (
    qkv: string,
    p: string,
    heads: number,
    shifted: boolean,
    grid: WindowGrid,
    mask: string | null,
  ) => {
    const src = shifted ? G.roll(qkv, -shift) : qkv;
    const [q, k, v] = G.split(G.windowPartition(src, { ...grid, channels: 3 * C }), 3, [C, C, C]);
    const table = `${p}.attn_win.relative_position_bias_table`;
    const bias = G.relativePositionBias(table, G.get(table), 'relative_position_index_SA', index, ws * ws, ws * ws);
    const o = G.attention(
      G.splitHeads(G.mul(q!, G.scalar(Math.floor(C / heads) ** -0.5)), heads, C),
      G.splitHeads(k!, heads, C, true),
      G.splitHeads(v!, heads, C),
      bias,
      shifted ? mask : null,
    );
    const img = G.windowReverse(G.dense(G.mergeHeads(o, C), `${p}.attn_win.proj`), grid);
    return flat(shifted ? G.roll(img, shift) : img, C);
  };

  const convFfn = (x: string, p: string): string => {
    const hidden = G.get(`${p}.fc1.weight`).shape[0]!;
    const h = G.gelu(G.dense(x, `${p}.fc1`));
    const conv = G.conv(G.toNchw(map(h, hidden)), `${p}.dwconv.depthwise_conv.0`, G.get, { group: hidden });
    return G.dense(G.add(h, flat(G.toNhwc(G.gelu(conv)), hidden)), `${p}.fc2`);
  };

  const ports = imagePorts(G.g, spec, opts.rgbPorts ?? false);
  const rows = symmetricPad(ports.input, 2);
  const cols = symmetricPad(rows.x, 3);
  const mean = spec.norm && spec.inChannels === 3 ? RGB_MEAN : null;
  const x = normalizeInput(G, cols.x, mean, 1);
  const shallow = G.conv(x, 'conv_first', G.get);
  let t = G.toNhwc(shallow);
  if (G.has('patch_embed.norm.weight')) t = G.norm(t, 'patch_embed.norm');
  const grid = G.grid(t, ws, C);
  hw = { h: G.dim(t, 1), w: grid.width };
  const mask = spec.depths.some((d) => d > 1) ? G.shiftedWindowMask(t, grid, shift) : null;
  let tokens = flat(t, C);
  spec.depths.forEach((depth, i) => {
    const groupIn = tokens;
    const heads = spec.numHeads[i]!;
    let td = G.node('Unsqueeze', [G.weightOf(`layers.${i}.residual_group.td`), G.i64([0])]); // [1, m, C]
    for (let j = 0; j < depth; j++) {
      const p = `layers.${i}.residual_group.layers.${j}`;
      const xn = G.norm(tokens, `${p}.norm1`);
      const qkv = G.dense(xn, `${p}.wqkv`);
      const ca = atdCa(xn, td, `${p}.attn_atd`);
      const aca = acMsa(qkv, ca.sim, `${p}.attn_aca`, heads);
      const win = windowMsa(map(qkv, 3 * C), p, heads, j % 2 === 1, grid, mask);
      tokens = G.add(G.add(G.add(tokens, win), ca.out), aca);
      tokens = G.add(tokens, convFfn(G.norm(tokens, `${p}.norm2`), `${p}.convffn`));
      if (j < depth - 1) {
        const simT = G.transpose(ca.sim, [0, 2, 1]); // [b, m, n]
        const normed = G.node(
          'InstanceNormalization',
          [simT, G.weightOf(`${p}.norm3.weight`), G.weightOf(`${p}.norm3.bias`)],
          {
            epsilon: attr.float(INSTANCE_NORM_EPS),
          },
        );
        const gathered = G.node('MatMul', [G.node('Softmax', [normed], { axis: attr.int(-1) }), tokens]);
        const s = G.sigmoid(G.weightOf(`${p}.sigma`)); // [m, 1]
        td = G.add(G.mul(s, td), G.mul(G.node('Sub', [G.scalar(1), s]), gathered));
      }
    }
    const conv = G.resiConv(G.toNchw(map(tokens, C)), `layers.${i}.conv`, spec.resiConnection);
    tokens = G.add(flat(G.toNhwc(conv), C), groupIn);
  });
  const body = G.add(
    G.resiConv(G.toNchw(map(G.norm(tokens, 'norm'), C)), 'conv_after_body', spec.resiConnection),
    shallow,
  );
  const out =
    spec.upsampler === 'none'
      ? G.add(x, G.conv(body, 'conv_last', G.get))
      : G.upsampleTail(body, spec.upsampler, spec.scale);
  const cropped = G.cropToScaled(denormalizeOutput(G, out, mean, 1), rows.size, cols.size, spec.scale);
  return finishModel(G.g, ports, cropped, spec);
}

/**
 * The tile planner's cost from the configuration: per token and layer the shared qkv, the window attention,
 * ATD-CA against the dictionary, AC-MSA over its group, the two projections, the ConvFFN and the dictionary
 * refinement, in multiply-adds (graph/transformerCost.ts), plus a per-layer term for the memory-bound work
 * (sorting, gathers, normalisations) fitted to one bench run: ATD-light measured 6.6× SRVGGNetCompact on a 256²
 * tile (`CRISP_BENCH_ARCH=ATD-light npm run bench -- --only arch`, 2026-11-27, load ~14). ATD (not benched)
 * comes to 37.6× (ATD-light 6.5×).
 */
const ATD_FIT = { macs: 1.3, perScore: 0.2 };

function atdRelativeCost(s: AtdSpec): number {
  const c = s.embedDim;
  const hidden = c * s.mlpRatio;
  const m = s.numTokens;
  const layer =
    5 * c * c +
    c * s.reducedDim +
    m * s.reducedDim +
    2 * m * c +
    2 * s.categorySize * c +
    2 * s.windowSize ** 2 * c +
    2 * c * hidden +
    s.convffnKernel ** 2 * hidden;
  const layers = s.depths.reduce((a, b) => a + b, 0);
  const macs =
    9 * s.inChannels * c + layers * layer + (s.depths.length + 1) * resiMacs(c, s.resiConnection) + tailMacs(c, s);
  return fitted(macs, layers, ATD_FIT);
}

export const atd: Architecture<AtdSpec> = {
  kind: 'atd',
  name: 'ATD',
  openModelDb: ['atd'],
  detect: (dict) => (looksLikeAtd(dict) ? detectAtd(dict) : undefined),
  describe: (s) =>
    `${s.variant} x${s.scale} (embed ${s.embedDim}, depths ${s.depths.join('/')}, heads ${s.numHeads.join('/')}, window ${s.windowSize}, ${s.numTokens} tokens of ${s.reducedDim}, category ${s.categorySize}, mlp ${s.mlpRatio}, ${s.upsampler}, ${s.resiConnection}${s.norm ? '' : ', no norm'}${s.qkvBias ? '' : ', no qkv bias'}${channelsNote(s)})`,
  // The graph pads to the window; ATD's mirror padding needs a side of at least half a window in PyTorch.
  tiling: (s) => ({ window: s.windowSize, minSide: s.windowSize, relativeCost: atdRelativeCost(s) }),
  build: (spec, dict, opts) => buildAtdOnnx(dict, spec, opts),
};
