/**
 * HAT, the Hybrid Attention Transformer (Chen et al. 2023; XPixelGroup/HAT, Apache-2.0): detection from a
 * state dict and the ONNX graph, for HAT-S, HAT and HAT-L alike (they differ only in widths and depths).
 *
 * Like SwinIR, a body of residual groups between conv_first and conv_after_body and a pixel-shuffle tail; each
 * residual hybrid attention group (RHAG) holds hybrid attention blocks (HAB: Swin window attention, plain and
 * shifted in turn, plus a channel-attention conv branch added at conv_scale 0.01) and one overlapping
 * cross-attention block (OCAB: queries from each window, keys and values from a larger window around it,
 * overlap_ratio·window wider, which is torch's nn.Unfold with zero padding, expressed here as a Gather).
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { blockMacs, relative, shuffleTailMacs } from '../graph/transformerCost.js';
import { attr, GraphBuilder } from '../graph/onnxWriter.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';
import {
  classicalEnd,
  countSeq,
  relativePositionIndex,
  swinHead,
  tensorGetter,
  windowFromTable,
  WindowGraph,
  type WindowGrid,
} from '../graph/windowAttention.js';

export interface HatSpec {
  kind: 'hat';
  /** HAT-S, HAT or HAT-L when the widths and depths are the published ones; 'HAT' otherwise. */
  variant: string;
  inChannels: number;
  outChannels: number;
  scale: number;
  embedDim: number;
  depths: number[];
  numHeads: number[];
  windowSize: number;
  /** The OCAB key/value window: window + int(overlap_ratio · window). */
  overlapWindow: number;
  mlpRatio: number;
  /** Channels of the CAB's inner conv and of its channel-attention squeeze. */
  cabChannels: number;
  squeezeChannels: number;
  resiConnection: '1conv' | 'identity';
}

/** CAB's weight in the HAB sum; a constructor argument, never stored (every released model uses 0.01). */
export const HAT_CONV_SCALE = 0.01;
const BLOCK0 = 'layers.0.residual_group.blocks.0';

export function looksLikeHat(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') &&
    dict.has(`${BLOCK0}.conv_block.cab.0.weight`) &&
    dict.has('layers.0.residual_group.overlap_attn.qkv.weight')
  );
}

export function detectHat(dict: StateDict): HatSpec {
  const get = tensorGetter(dict, 'HAT');
  if (dict.has('absolute_pos_embed'))
    throw new UnsupportedArchitectureError(
      'this HAT checkpoint uses an absolute position embedding (a fixed input size); that variant is not supported',
    );
  const [embedDim, inChannels] = get('conv_first.weight').shape as [number, number];
  const numLayers = countSeq(dict, 'layers', 'residual_group.overlap_attn.qkv.weight');
  const depths: number[] = [];
  const numHeads: number[] = [];
  for (let i = 0; i < numLayers; i++) {
    depths.push(countSeq(dict, `layers.${i}.residual_group.blocks`, 'norm1.weight'));
    numHeads.push(get(`layers.${i}.residual_group.overlap_attn.relative_position_bias_table`).shape[1]!);
  }
  const windowSize = windowFromTable(get(`${BLOCK0}.attn.relative_position_bias_table`), 'HAT');
  // The OCA table has (window + overlapWindow − 1)² rows.
  const ocaRows = get('layers.0.residual_group.overlap_attn.relative_position_bias_table').shape[0]!;
  const overlapWindow = Math.round(Math.sqrt(ocaRows)) - windowSize + 1;
  if ((windowSize + overlapWindow - 1) ** 2 !== ocaRows || overlapWindow < windowSize)
    throw new UnsupportedArchitectureError(`HAT: an OCA position table of ${ocaRows} rows fits no overlapping window`);
  if ((overlapWindow - windowSize) % 2 !== 0)
    throw new UnsupportedArchitectureError(
      `HAT: an overlapping window of ${overlapWindow} around a ${windowSize} window cannot be centred (the model fails in PyTorch too)`,
    );
  const sa = dict.get('relative_position_index_SA');
  const oca = dict.get('relative_position_index_OCA');
  if (sa && sa.shape[0] !== windowSize ** 2)
    throw new UnsupportedArchitectureError(`HAT: relative_position_index_SA does not fit a ${windowSize}² window`);
  if (oca && (oca.shape[0] !== windowSize ** 2 || oca.shape[1] !== overlapWindow ** 2))
    throw new UnsupportedArchitectureError(`HAT: relative_position_index_OCA does not fit a ${overlapWindow}² window`);
  const numFeat = get('conv_last.weight').shape[1]!;
  const outChannels = get('conv_last.weight').shape[0]!;
  let scale = 1;
  for (let i = 0; dict.has(`upsample.${i}.weight`); i += 2) {
    const oc = get(`upsample.${i}.weight`).shape[0]!;
    const r = Math.round(Math.sqrt(oc / numFeat));
    if (r * r * numFeat !== oc)
      throw new UnsupportedArchitectureError(`HAT: upsample.${i} does not make a pixel shuffle of ${numFeat}`);
    scale *= r;
  }
  const hidden = get(`${BLOCK0}.mlp.fc1.weight`).shape[0]!;
  const spec: HatSpec = {
    kind: 'hat',
    variant: 'HAT',
    inChannels,
    outChannels,
    scale,
    embedDim,
    depths,
    numHeads,
    windowSize,
    overlapWindow,
    mlpRatio: hidden / embedDim,
    cabChannels: get(`${BLOCK0}.conv_block.cab.0.weight`).shape[0]!,
    squeezeChannels: get(`${BLOCK0}.conv_block.cab.3.attention.1.weight`).shape[0]!,
    resiConnection: dict.has('conv_after_body.weight') ? '1conv' : 'identity',
  };
  spec.variant = hatVariant(spec);
  return spec;
}

/** The published configurations: HAT-S (144 wide, CAB ÷24), HAT (180, ÷3), HAT-L (180, ÷3, 12 groups). */
function hatVariant(s: HatSpec): string {
  const six = s.depths.every((d) => d === 6);
  if (s.embedDim === 144 && s.cabChannels === 6 && six && s.depths.length === 6) return 'HAT-S';
  if (s.embedDim === 180 && s.cabChannels === 60 && six && s.depths.length === 6) return 'HAT';
  if (s.embedDim === 180 && s.cabChannels === 60 && six && s.depths.length === 12) return 'HAT-L';
  return 'HAT';
}

/**
 * HAT's relative_position_index_OCA: query token i of a ws² window against key token j of the ows² window
 * around it. HAT's formula goes negative for some pairs and relies on PyTorch's wrap-around indexing;
 * the wrapped (non-negative) index is returned, which selects the same table rows.
 */
export function ocaRelativePositionIndex(ws: number, ows: number): number[] {
  const n = ws * ws;
  const m = ows * ows;
  const side = ws + ows - 1;
  const out = new Array<number>(n * m);
  for (let i = 0; i < n; i++) {
    const [yi, xi] = [Math.floor(i / ws), i % ws];
    for (let j = 0; j < m; j++) {
      const [yj, xj] = [Math.floor(j / ows), j % ows];
      const idx = (yj - yi + ws - ows + 1) * side + (xj - xi + ws - ows + 1);
      out[i * m + j] = idx < 0 ? idx + side * side : idx;
    }
  }
  return out;
}

/** HAT's CAB on NCHW: conv → GELU → conv → channel attention (RCAN's squeeze-and-excitation). */
function cab(w: WindowGraph, x: string, prefix: string, get: (k: string) => Tensor): string {
  const y = w.conv(w.gelu(w.conv(x, `${prefix}.cab.0`, get)), `${prefix}.cab.2`, get);
  const pooled = w.node('GlobalAveragePool', [y]);
  const squeeze = w.node('Relu', [w.conv(pooled, `${prefix}.cab.3.attention.1`, get)]);
  const gate = w.node('Sigmoid', [w.conv(squeeze, `${prefix}.cab.3.attention.3`, get)]);
  return w.mul(y, gate);
}

interface HatContext {
  grid: WindowGrid;
  mask: string;
  spec: HatSpec;
  /** int64 [nH, ows] and [nW, ows]: the padded rows / columns each overlapping window reads. */
  rowIndex: string;
  colIndex: string;
  /** An optional tensor (qkv biases are absent when trained with qkv_bias=False). */
  opt: (key: string) => Tensor | null;
}

function hab(
  w: WindowGraph,
  x: string,
  prefix: string,
  get: (k: string) => Tensor,
  heads: number,
  shift: number,
  ctx: HatContext,
): string {
  const ws = ctx.spec.windowSize;
  const n = ws * ws;
  const h = w.layerNorm(x, `${prefix}.norm1`, get(`${prefix}.norm1.weight`), get(`${prefix}.norm1.bias`));
  const convX = w.toNhwc(cab(w, w.toNchw(h), `${prefix}.conv_block`, get));
  const shifted = shift > 0 ? w.roll(h, -shift) : h;
  const bias = w.relativePositionBias(
    `${prefix}.attn.relative_position_bias_table`,
    get(`${prefix}.attn.relative_position_bias_table`),
    'relative_position_index_SA',
    relativePositionIndex(ws),
    n,
    n,
  );
  const attn = w.windowAttention(
    w.windowPartition(shifted, ctx.grid),
    `${prefix}.attn`,
    {
      qkvWeight: get(`${prefix}.attn.qkv.weight`),
      qkvBias: ctx.opt(`${prefix}.attn.qkv.bias`),
      projWeight: get(`${prefix}.attn.proj.weight`),
      projBias: get(`${prefix}.attn.proj.bias`),
      heads,
    },
    bias,
    shift > 0 ? ctx.mask : null,
  );
  let attnX = w.windowReverse(attn, ctx.grid);
  if (shift > 0) attnX = w.roll(attnX, shift);
  const y = w.add(w.add(x, attnX), w.mul(convX, w.f32([HAT_CONV_SCALE], [1])));
  const m = w.layerNorm(y, `${prefix}.norm2`, get(`${prefix}.norm2.weight`), get(`${prefix}.norm2.bias`));
  return w.add(y, w.mlp(m, `${prefix}.mlp`, get));
}

/**
 * nn.Unfold(kernel ows, stride ws, padding (ows−ws)/2) of an NHWC map, as windows [B, nWin, ows², C] in the
 * order HAT rearranges them: zero-pad, then gather each window's rows and columns.
 */
function overlappingWindows(w: WindowGraph, x: string, ctx: HatContext): string {
  const { windowSize: ws, overlapWindow: ows, embedDim: c } = ctx.spec;
  const p = (ows - ws) / 2;
  const padded = w.node('Pad', [x, w.i64([0, p, p, 0, 0, p, p, 0])], { mode: attr.string('constant') });
  const rows = w.node('Gather', [padded, ctx.rowIndex], { axis: attr.int(1) }); // [B, nH, ows, W+2p, C]
  const both = w.node('Gather', [rows, ctx.colIndex], { axis: attr.int(3) }); // [B, nH, ows, nW, ows, C]
  return w.reshape(w.transpose(both, [0, 1, 3, 2, 4, 5]), [0, -1, ows * ows, c]);
}

/** int64 [count, ows]: start·ws + offset, for count = size / ws windows (size an int64 [1] tensor). */
function unfoldIndex(w: WindowGraph, size: string, ws: number, ows: number): string {
  const count = w.node('Squeeze', [w.node('Div', [size, w.i64([ws])]), w.i64([0])]);
  const zero = w.node('Squeeze', [w.i64([0]), w.i64([0])]);
  const one = w.node('Squeeze', [w.i64([1]), w.i64([0])]);
  const starts = w.mul(w.node('Range', [zero, count, one]), w.i64([ws]));
  const offsets = w.i64(Array.from({ length: ows }, (_, i) => i));
  return w.add(w.node('Unsqueeze', [starts, w.i64([1])]), w.reshape(offsets, [1, ows]));
}

function ocab(
  w: WindowGraph,
  x: string,
  prefix: string,
  get: (k: string) => Tensor,
  heads: number,
  ctx: HatContext,
): string {
  const { windowSize: ws, overlapWindow: ows, embedDim: c } = ctx.spec;
  const h = w.layerNorm(x, `${prefix}.norm1`, get(`${prefix}.norm1.weight`), get(`${prefix}.norm1.bias`));
  const qkvW = get(`${prefix}.qkv.weight`);
  const qkvB = ctx.opt(`${prefix}.qkv.bias`);
  const part = (i: number, factor: number) =>
    w.linear(
      h,
      `${prefix}.qkv.${'qkv'[i]}`,
      { shape: [c, c], data: qkvW.data.slice(i * c * c, (i + 1) * c * c).map((v) => v * factor) },
      qkvB ? { shape: [c], data: qkvB.data.slice(i * c, (i + 1) * c).map((v) => v * factor) } : null,
    );
  const q = w.splitHeads(w.windowPartition(part(0, (c / heads) ** -0.5), ctx.grid), heads, c);
  const kT = w.splitHeads(overlappingWindows(w, part(1, 1), ctx), heads, c, true);
  const v = w.splitHeads(overlappingWindows(w, part(2, 1), ctx), heads, c);
  const bias = w.relativePositionBias(
    `${prefix}.relative_position_bias_table`,
    get(`${prefix}.relative_position_bias_table`),
    'relative_position_index_OCA',
    ocaRelativePositionIndex(ws, ows),
    ws * ws,
    ows * ows,
  );
  const attn = w.windowReverse(w.mergeHeads(w.attention(q, kT, v, bias, null), c), ctx.grid);
  const y = w.add(w.linear(attn, `${prefix}.proj`, get(`${prefix}.proj.weight`), get(`${prefix}.proj.bias`)), x);
  const m = w.layerNorm(y, `${prefix}.norm2`, get(`${prefix}.norm2.weight`), get(`${prefix}.norm2.bias`));
  return w.add(y, w.mlp(m, `${prefix}.mlp`, get));
}

export function buildHatOnnx(dict: StateDict, spec: HatSpec = detectHat(dict), opts: BuildOptions = {}): Uint8Array {
  const get = tensorGetter(dict, 'HAT');
  const w = new WindowGraph(new GraphBuilder('HAT'));
  const ws = spec.windowSize;
  const head = swinHead(w, dict, get, spec, { range: 1, rgbPorts: opts.rgbPorts ?? false });
  const grid = head.grid;
  let tokens = head.tokens;
  const ctx: HatContext = {
    grid,
    mask: w.shiftedWindowMask(tokens, grid, Math.floor(ws / 2)),
    spec,
    rowIndex: unfoldIndex(w, w.shape(tokens, 1, 2), ws, spec.overlapWindow),
    colIndex: unfoldIndex(w, grid.width, ws, spec.overlapWindow),
    opt: (key) => dict.get(key) ?? null,
  };
  spec.depths.forEach((depth, i) => {
    const groupIn = tokens;
    const heads = spec.numHeads[i]!;
    for (let j = 0; j < depth; j++) {
      const shift = j % 2 === 1 ? Math.floor(ws / 2) : 0;
      tokens = hab(w, tokens, `layers.${i}.residual_group.blocks.${j}`, get, heads, shift, ctx);
    }
    tokens = ocab(w, tokens, `layers.${i}.residual_group.overlap_attn`, get, heads, ctx);
    if (spec.resiConnection === '1conv') tokens = w.toNhwc(w.conv(w.toNchw(tokens), `layers.${i}.conv`, get));
    tokens = w.add(tokens, groupIn);
  });
  head.ports.finish(classicalEnd(w, dict, get, tokens, head, spec));
  return w.g.toBytes({
    inChannels: head.ports.inChannels,
    outChannels: head.ports.outChannels,
    producer: 'crisp-convert (HAT)',
    doc: JSON.stringify(spec),
  });
}

/** The tile planner's cost, from the configuration (graph/transformerCost.ts). */
function hatRelativeCost(s: HatSpec): number {
  const e = s.embedDim;
  const blocks = s.depths.reduce((a, b) => a + b, 0);
  const cab = 2 * 9 * e * s.cabChannels + 2 * e * s.squeezeChannels;
  let macs = 9 * s.inChannels * e + blocks * (blockMacs(e, s.mlpRatio, s.windowSize ** 2) + cab);
  macs += s.depths.length * blockMacs(e, s.mlpRatio, s.overlapWindow ** 2);
  if (s.resiConnection === '1conv') macs += (s.depths.length + 1) * 9 * e * e;
  macs += shuffleTailMacs(e, s.scale, s.outChannels);
  return relative(macs, blocks + s.depths.length);
}

export const hat: Architecture<HatSpec> = {
  kind: 'hat',
  name: 'HAT',
  openModelDb: ['hat'],
  detect: (dict) => (looksLikeHat(dict) ? detectHat(dict) : undefined),
  describe: (s) =>
    `${s.variant} x${s.scale} (embed ${s.embedDim}, depths ${s.depths.join('/')}, heads ${s.numHeads.join('/')}, window ${s.windowSize}, overlap window ${s.overlapWindow}, mlp ${s.mlpRatio}, CAB ${s.cabChannels}/${s.squeezeChannels}${s.resiConnection === '1conv' ? '' : ', no residual conv'}${channelsNote(s)})`,
  // The graph reflect-pads to the window, which needs a tile of at least one window.
  tiling: (s) => ({ window: s.windowSize, minSide: s.windowSize, relativeCost: hatRelativeCost(s) }),
  build: (spec, dict, opts) => buildHatOnnx(dict, spec, opts),
};
