/**
 * DRCT, the Dense-residual-connected Transformer (Hsu et al. 2024; ming053l/DRCT, MIT): detection from a state
 * dict and the ONNX graph, for DRCT and DRCT-L alike (6 or 12 groups of the same shape).
 *
 * SwinIR's outline (conv_first, patch-embed LayerNorm, residual groups, LayerNorm, conv_after_body, the classical
 * pixel-shuffle tail) with residual dense groups (RDG): five Swin blocks, plain and shifted in turn, on a growing
 * concatenation — block k sees the group input and the k earlier blocks' outputs, each squeezed to `gc` channels
 * by a 1×1 conv and LeakyReLU(0.2), so its width is embed + k·gc; the fifth 1×1 conv maps back to embed, and the
 * group adds 0.2 of it to its input. Blocks 2–5 have num_heads − (width mod num_heads) heads (each block's own
 * bias table says how many), blocks 4 and 5 an MLP ratio of 1.
 *
 * The network does not pad; DRCT's model wrapper (drct_model.py) reflect-pads to the window multiple and crops
 * back, which the graph does, so any size runs.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { finishModel } from '../graph/graphOps.js';
import { blockMacs, relative, shuffleTailMacs } from '../graph/transformerCost.js';
import { attr, GraphBuilder } from '../graph/onnxWriter.js';
import type { StateDict } from '../checkpoint/stateDict.js';
import {
  classicalEnd,
  countSeq,
  relativePositionIndex,
  swinBlock,
  swinHead,
  tensorGetter,
  windowFromTable,
  WindowGraph,
} from '../graph/windowAttention.js';

export interface DrctSpec {
  kind: 'drct';
  /** DRCT or DRCT-L when the widths and group count are the published ones; 'DRCT' otherwise. */
  variant: string;
  inChannels: number;
  outChannels: number;
  scale: number;
  embedDim: number;
  /** Number of residual dense groups (DRCT 6, DRCT-L 12). */
  groups: number;
  /** Heads of each group's five blocks, as their bias tables say. */
  heads: number[][];
  windowSize: number;
  /** Growth channels: what each block's 1×1 conv adds to the concatenation. */
  growth: number;
  /** MLP ratio of blocks 1–3 (blocks 4 and 5 use 1). */
  mlpRatio: number;
  /** False when trained at a size no larger than the window (no attn_mask buffers: no block shifts). */
  shifted: boolean;
  qkvBias: boolean;
  resiConnection: '1conv' | 'identity';
}

/** The RDG's constant weight on its dense path. */
const DENSE_SCALE = 0.2;
const BLOCKS = 5;
const SWIN1 = 'layers.0.swin1';

export function looksLikeDrct(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') &&
    dict.has(`${SWIN1}.attn.relative_position_bias_table`) &&
    dict.has('layers.0.adjust1.weight') &&
    dict.has('layers.0.swin5.norm1.weight')
  );
}

export function detectDrct(dict: StateDict): DrctSpec {
  const get = tensorGetter(dict, 'DRCT');
  if (dict.has('absolute_pos_embed'))
    throw new UnsupportedArchitectureError(
      'this DRCT checkpoint uses an absolute position embedding (a fixed input size); that variant is not supported',
    );
  if (!dict.has('conv_last.weight'))
    throw new UnsupportedArchitectureError(
      'this DRCT checkpoint has no reconstruction tail (conv_last): DRCT without an upsampler returns its input unchanged, so there is nothing to convert',
    );
  const [embedDim, inChannels] = get('conv_first.weight').shape as [number, number];
  const groups = countSeq(dict, 'layers', 'swin1.norm1.weight');
  const growth = get('layers.0.adjust1.weight').shape[0]!;
  const windowSize = windowFromTable(get(`${SWIN1}.attn.relative_position_bias_table`), 'DRCT');
  const index = dict.get(`${SWIN1}.attn.relative_position_index`);
  if (index && index.shape[0] !== windowSize ** 2)
    throw new UnsupportedArchitectureError(
      `DRCT: relative_position_index is ${index.shape[0]} tokens but the bias table is for a ${windowSize}² window`,
    );
  const heads: number[][] = [];
  for (let i = 0; i < groups; i++) {
    const row: number[] = [];
    for (let k = 0; k < BLOCKS; k++) {
      const width = embedDim + k * growth;
      const table = get(`layers.${i}.swin${k + 1}.attn.relative_position_bias_table`);
      const h = table.shape[1]!;
      if (table.shape[0] !== (2 * windowSize - 1) ** 2 || width % h !== 0)
        throw new UnsupportedArchitectureError(
          `DRCT: layers.${i}.swin${k + 1} (${width} channels, ${h} heads, ${table.shape[0]} positions) does not fit a ${windowSize}² window`,
        );
      row.push(h);
    }
    const back = get(`layers.${i}.adjust5.weight`).shape[0];
    if (back !== embedDim)
      throw new UnsupportedArchitectureError(`DRCT: layers.${i}.adjust5 maps to ${back} channels, not ${embedDim}`);
    heads.push(row);
  }
  const numFeat = get('conv_before_upsample.0.weight').shape[0]!;
  let scale = 1;
  for (let i = 0; dict.has(`upsample.${i}.weight`); i += 2) {
    const oc = get(`upsample.${i}.weight`).shape[0]!;
    const r = Math.round(Math.sqrt(oc / numFeat));
    if (r * r * numFeat !== oc)
      throw new UnsupportedArchitectureError(`DRCT: upsample.${i} does not make a pixel shuffle of ${numFeat}`);
    scale *= r;
  }
  const spec: DrctSpec = {
    kind: 'drct',
    variant: 'DRCT',
    inChannels,
    outChannels: get('conv_last.weight').shape[0]!,
    scale,
    embedDim,
    groups,
    heads,
    windowSize,
    growth,
    mlpRatio: get(`${SWIN1}.mlp.fc1.weight`).shape[0]! / embedDim,
    // Shifted blocks keep their mask as a buffer; a file with buffers but no mask trained without shifts.
    shifted: dict.has('layers.0.swin2.attn_mask') || !index,
    qkvBias: dict.has(`${SWIN1}.attn.qkv.bias`),
    resiConnection: dict.has('conv_after_body.weight') ? '1conv' : 'identity',
  };
  spec.variant = drctVariant(spec);
  return spec;
}

/** The published configurations: embed 180, growth 32, window 16, 6 heads; DRCT 6 groups, DRCT-L 12. */
function drctVariant(s: DrctSpec): string {
  const released = s.embedDim === 180 && s.growth === 32 && s.windowSize === 16 && s.heads.every((h) => h[0] === 6);
  return released && s.groups === 12 ? 'DRCT-L' : 'DRCT';
}

export function buildDrctOnnx(dict: StateDict, spec: DrctSpec = detectDrct(dict), opts: BuildOptions = {}): Uint8Array {
  const get = tensorGetter(dict, 'DRCT');
  const w = new WindowGraph(new GraphBuilder('DRCT'));
  const ws = spec.windowSize;
  // The reflect padding is DRCT's model wrapper's (drct_model.py), before it normalises.
  const head = swinHead(w, dict, get, spec, { range: 1, rgbPorts: opts.rgbPorts ?? false });
  const grid = head.grid;
  let tokens = head.tokens;
  const shift = spec.shifted ? Math.floor(ws / 2) : 0;
  const mask = shift > 0 ? w.shiftedWindowMask(tokens, grid, shift) : null;
  const index = relativePositionIndex(ws);
  for (let i = 0; i < spec.groups; i++) {
    const dense = [tokens];
    for (let k = 0; k < BLOCKS; k++) {
      const width = spec.embedDim + k * spec.growth;
      // A copy: the graph keeps the array it is given, and dense grows.
      const input = dense.length === 1 ? tokens : w.concat([...dense], 3);
      const y = swinBlock(w, input, `layers.${i}.swin${k + 1}`, get, {
        grid: { ...grid, channels: width },
        heads: spec.heads[i]![k]!,
        shift: k % 2 === 1 ? shift : 0,
        mask,
        indexName: 'relative_position_index',
        index,
        qkvBias: spec.qkvBias,
      });
      // The 1×1 adjust conv on NHWC tokens is a Linear with the conv's [out, in] weight.
      const adjust = get(`layers.${i}.adjust${k + 1}.weight`);
      const squeezed = w.linear(
        y,
        `layers.${i}.adjust${k + 1}`,
        { shape: adjust.shape.slice(0, 2), data: adjust.data },
        get(`layers.${i}.adjust${k + 1}.bias`),
      );
      dense.push(k < BLOCKS - 1 ? w.node('LeakyRelu', [squeezed], { alpha: attr.float(0.2) }) : squeezed);
    }
    tokens = w.add(w.mul(dense[BLOCKS]!, w.f32([DENSE_SCALE], [1])), tokens);
  }
  return finishModel(w.g, head.ports, classicalEnd(w, dict, get, tokens, head, spec), spec);
}

/**
 * The tile planner's cost from the configuration (graph/transformerCost.ts, whose constants were fitted on SwinIR
 * and HAT runs): per group five Swin blocks of widths embed + k·growth and their 1×1 convs. DRCT comes to 21×
 * SRVGGNetCompact (measured 20.6× on a 256² tile: `CRISP_BENCH_ARCH=DRCT npm run bench -- --only arch`,
 * 2026-11-27, load ~12), DRCT-L 40× (HAT, the same outline with its CAB branch, is 29×).
 */
function drctRelativeCost(s: DrctSpec): number {
  let group = 0;
  for (let k = 0; k < BLOCKS; k++) {
    const width = s.embedDim + k * s.growth;
    group += blockMacs(width, k < 3 ? s.mlpRatio : 1, s.windowSize ** 2);
    group += width * (k < BLOCKS - 1 ? s.growth : s.embedDim);
  }
  let macs = 9 * s.inChannels * s.embedDim + s.groups * group;
  if (s.resiConnection === '1conv') macs += 9 * s.embedDim * s.embedDim;
  macs += shuffleTailMacs(s.embedDim, s.scale, s.outChannels);
  return relative(macs, s.groups * BLOCKS);
}

export const drct: Architecture<DrctSpec> = {
  kind: 'drct',
  name: 'DRCT',
  openModelDb: ['drct'],
  detect: (dict) => (looksLikeDrct(dict) ? detectDrct(dict) : undefined),
  describe: (s) =>
    `${s.variant} x${s.scale} (embed ${s.embedDim}, ${s.groups} groups, heads ${s.heads.map((h) => h[0]).join('/')}, window ${s.windowSize}, growth ${s.growth}, mlp ${s.mlpRatio}${s.shifted ? '' : ', no shift'}${s.qkvBias ? '' : ', no qkv bias'}${s.resiConnection === '1conv' ? '' : ', no residual conv'}${channelsNote(s)})`,
  // The graph reflect-pads to the window, which needs a tile of at least one window.
  tiling: (s) => ({ window: s.windowSize, minSide: s.windowSize, relativeCost: drctRelativeCost(s) }),
  build: (spec, dict, opts) => buildDrctOnnx(dict, spec, opts),
};
