/**
 * SwinIR (Liang et al. 2021; JingyunLiang/SwinIR, Apache-2.0): detection from a state dict and the ONNX graph.
 *
 * Variants by upsampler, told apart by their keys: classical `pixelshuffle` (conv_before_upsample + upsample.N
 * + conv_last), lightweight `pixelshuffledirect` (upsample.0 only), real-world `nearest+conv` (conv_up1..3,
 * conv_hr) and the 1× denoise / JPEG models (conv_last only, a residual on the input). The body: conv_first,
 * patch-embed LayerNorm, residual Swin transformer blocks (RSTB: Swin blocks alternating plain and shifted
 * windows, then a 1-conv or 3-conv residual), LayerNorm, conv_after_body.
 *
 * Like SwinIR's own check_image_size, the graph reflect-pads the input to the window multiple and crops the
 * output back, so any size runs.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { blockMacs, relative, shuffleTailMacs, TAIL_FEAT } from '../graph/transformerCost.js';
import { attr, GraphBuilder } from '../graph/onnxWriter.js';
import type { StateDict } from '../checkpoint/stateDict.js';
import {
  countSeq,
  denormalizeOutput,
  pixelShuffleTail,
  relativePositionIndex,
  residualConv,
  swinBlock,
  swinHead,
  tensorGetter,
  windowFromTable,
  WindowGraph,
} from '../graph/windowAttention.js';

export type SwinirUpsampler = 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv' | 'none';

export interface SwinirSpec {
  kind: 'swinir';
  /** The SwinIR paper's task family, from the upsampler. */
  variant: 'classical' | 'lightweight' | 'real-world' | 'restoration';
  upsampler: SwinirUpsampler;
  inChannels: number;
  outChannels: number;
  scale: number;
  embedDim: number;
  depths: number[];
  numHeads: number[];
  windowSize: number;
  mlpRatio: number;
  resiConnection: '1conv' | '3conv';
  /** Whether odd blocks use shifted windows (not when the training size was at most one window). */
  shifted: boolean;
  /** 255 for the JPEG artifact-reduction models (window 7), 1 otherwise, as the released inference does. */
  imgRange: number;
}

const BLOCK0 = 'layers.0.residual_group.blocks.0';

export function looksLikeSwinir(dict: StateDict): boolean {
  return (
    dict.has(`${BLOCK0}.norm1.weight`) &&
    dict.has(`${BLOCK0}.attn.relative_position_bias_table`) &&
    dict.has(`${BLOCK0}.mlp.fc1.weight`) &&
    dict.has(`${BLOCK0}.attn.qkv.weight`) &&
    // SRFormer's permuted self-attention has the same block names but q/kv projections and this index.
    !dict.has(`${BLOCK0}.attn.aligned_relative_position_index`) &&
    // Swin2SR (Swin V2: cosine attention with a logit scale and a continuous position-bias MLP) is named by
    // unsupportedArchitectures.ts.
    !dict.has(`${BLOCK0}.attn.logit_scale`) &&
    (dict.has('conv_first.weight') || dict.has('conv_first.1.weight')) &&
    !dict.has(`${BLOCK0}.conv_block.cab.0.weight`) &&
    !dict.has('layers.0.residual_group.overlap_attn.qkv.weight')
  );
}

export function detectSwinir(dict: StateDict): SwinirSpec {
  const get = tensorGetter(dict, 'SwinIR');
  if (dict.has('conv_first.1.weight'))
    throw new UnsupportedArchitectureError(
      'this SwinIR checkpoint starts with a pixel-unshuffle (conv_first.1); that SwinIR variant is not supported',
    );
  const first = get('conv_first.weight');
  const [embedDim, inChannels] = first.shape as [number, number];
  const numLayers = countSeq(dict, 'layers', 'residual_group.blocks.0.norm1.weight');
  const depths: number[] = [];
  const numHeads: number[] = [];
  for (let i = 0; i < numLayers; i++) {
    depths.push(countSeq(dict, `layers.${i}.residual_group.blocks`, 'norm1.weight'));
    numHeads.push(get(`layers.${i}.residual_group.blocks.0.attn.relative_position_bias_table`).shape[1]!);
  }
  const windowSize = windowFromTable(get(`${BLOCK0}.attn.relative_position_bias_table`), 'SwinIR');
  const index = dict.get(`${BLOCK0}.attn.relative_position_index`);
  if (index && index.shape[0] !== windowSize * windowSize)
    throw new UnsupportedArchitectureError(
      `SwinIR: relative_position_index is ${index.shape[0]} tokens but the bias table is for a ${windowSize}² window`,
    );
  // Blocks store their shift mask as a buffer; a checkpoint with buffers but no mask trained without shifts.
  const shifted = !(index && depths[0]! > 1 && !dict.has('layers.0.residual_group.blocks.1.attn_mask'));
  const resiConnection = dict.has('conv_after_body.weight') ? '1conv' : '3conv';
  if (resiConnection === '3conv') get('conv_after_body.0.weight');

  let upsampler: SwinirUpsampler;
  if (dict.has('conv_before_upsample.0.weight'))
    upsampler = dict.has('conv_up1.weight') ? 'nearest+conv' : 'pixelshuffle';
  else if (dict.has('upsample.0.weight')) upsampler = 'pixelshuffledirect';
  else upsampler = 'none';
  const outChannels = dict.get('conv_last.weight')?.shape[0] ?? inChannels;
  let scale = 1;
  if (upsampler === 'pixelshuffle') {
    const numFeat = get('conv_before_upsample.0.weight').shape[0]!;
    for (let i = 0; dict.has(`upsample.${i}.weight`); i += 2) {
      const r = Math.round(Math.sqrt(get(`upsample.${i}.weight`).shape[0]! / numFeat));
      if (r * r * numFeat !== get(`upsample.${i}.weight`).shape[0])
        throw new UnsupportedArchitectureError(`SwinIR: upsample.${i} does not make a pixel shuffle of ${numFeat}`);
      scale *= r;
    }
  } else if (upsampler === 'nearest+conv') {
    let ups = 0;
    while (dict.has(`conv_up${ups + 1}.weight`)) ups++;
    scale = 2 ** ups;
  } else if (upsampler === 'pixelshuffledirect') {
    const oc = get('upsample.0.weight').shape[0]!;
    scale = Math.round(Math.sqrt(oc / outChannels));
    if (scale * scale * outChannels !== oc)
      throw new UnsupportedArchitectureError(`SwinIR: upsample.0 has ${oc} outputs, not ${outChannels}×scale²`);
  }
  const hidden = get(`${BLOCK0}.mlp.fc1.weight`).shape[0]!;
  return {
    kind: 'swinir',
    variant: VARIANT[upsampler],
    upsampler,
    inChannels,
    outChannels,
    scale,
    embedDim,
    depths,
    numHeads,
    windowSize,
    mlpRatio: hidden / embedDim,
    resiConnection,
    shifted,
    imgRange: windowSize === 7 ? 255 : 1,
  };
}

const VARIANT: Record<SwinirUpsampler, SwinirSpec['variant']> = {
  pixelshuffle: 'classical',
  pixelshuffledirect: 'lightweight',
  'nearest+conv': 'real-world',
  none: 'restoration',
};

export function buildSwinirOnnx(
  dict: StateDict,
  spec: SwinirSpec = detectSwinir(dict),
  opts: BuildOptions = {},
): Uint8Array {
  const get = tensorGetter(dict, 'SwinIR');
  const w = new WindowGraph(new GraphBuilder('SwinIR'));
  const ws = spec.windowSize;
  const head = swinHead(w, dict, get, spec, { range: spec.imgRange, rgbPorts: opts.rgbPorts ?? false });
  const { ports, padded, mean, normalized: x, feat, grid } = head;
  let tokens = head.tokens;
  const shift = spec.shifted ? Math.floor(ws / 2) : 0;
  const mask = shift > 0 && spec.depths.some((d) => d > 1) ? w.shiftedWindowMask(tokens, grid, shift) : null;
  const index = relativePositionIndex(ws);
  spec.depths.forEach((depth, i) => {
    const layerIn = tokens;
    for (let j = 0; j < depth; j++) {
      tokens = swinBlock(w, tokens, `layers.${i}.residual_group.blocks.${j}`, get, {
        grid,
        heads: spec.numHeads[i]!,
        shift: j % 2 === 1 ? shift : 0,
        mask,
        indexName: 'relative_position_index',
        index,
      });
    }
    const conv = residualConv(w, w.toNchw(tokens), `layers.${i}.conv`, spec.resiConnection, get);
    tokens = w.add(w.toNhwc(conv), layerIn);
  });
  tokens = w.layerNorm(tokens, 'norm', get('norm.weight'), get('norm.bias'));
  const body = w.add(residualConv(w, w.toNchw(tokens), 'conv_after_body', spec.resiConnection, get), feat);

  let out: string;
  const shuffle = (v: string, r: number) =>
    w.node('DepthToSpace', [v], { blocksize: attr.int(r), mode: attr.string('CRD') });
  if (spec.upsampler === 'pixelshuffle') {
    out = pixelShuffleTail(w, body, dict, get);
  } else if (spec.upsampler === 'pixelshuffledirect') {
    out = shuffle(w.conv(body, 'upsample.0', get), spec.scale);
  } else if (spec.upsampler === 'nearest+conv') {
    const lrelu = (v: string) => w.node('LeakyRelu', [v], { alpha: attr.float(0.2) });
    let y = w.node('LeakyRelu', [w.conv(body, 'conv_before_upsample.0', get)], { alpha: attr.float(0.01) });
    for (let i = 1; 2 ** i <= spec.scale; i++) y = lrelu(w.conv(w.g.resizeNearest(y, 2, 2), `conv_up${i}`, get));
    out = w.conv(lrelu(w.conv(y, 'conv_hr', get)), 'conv_last', get);
  } else {
    out = w.add(x, w.conv(body, 'conv_last', get));
  }
  out = denormalizeOutput(w, out, mean, spec.imgRange);
  ports.finish(w.cropToScaled(out, padded.h, padded.w, spec.scale));
  return w.g.toBytes({
    inChannels: ports.inChannels,
    outChannels: ports.outChannels,
    producer: 'crisp-convert (SwinIR)',
    doc: JSON.stringify(spec),
  });
}

/** The tile planner's cost, from the configuration (graph/transformerCost.ts). */
function swinirRelativeCost(s: SwinirSpec): number {
  const e = s.embedDim;
  const blocks = s.depths.reduce((a, b) => a + b, 0);
  const resi = s.resiConnection === '1conv' ? 9 * e * e : 9 * e * (e / 4) * 2 + (e / 4) ** 2;
  let macs = 9 * s.inChannels * e + blocks * blockMacs(e, s.mlpRatio, s.windowSize ** 2);
  macs += (s.depths.length + 1) * resi;
  const area = s.scale * s.scale;
  if (s.upsampler === 'pixelshuffle') macs += shuffleTailMacs(e, s.scale, s.outChannels);
  else if (s.upsampler === 'pixelshuffledirect') macs += 9 * e * s.outChannels * area;
  else if (s.upsampler === 'nearest+conv') {
    macs += 9 * e * TAIL_FEAT + 9 * TAIL_FEAT * (TAIL_FEAT + s.outChannels) * area;
    for (let a = 4; a <= area; a *= 4) macs += 9 * TAIL_FEAT * TAIL_FEAT * a;
  } else macs += 9 * e * s.outChannels;
  return relative(macs, blocks);
}

export const swinir: Architecture<SwinirSpec> = {
  kind: 'swinir',
  name: 'SwinIR',
  openModelDb: ['swinir'],
  detect: (dict) => (looksLikeSwinir(dict) ? detectSwinir(dict) : undefined),
  describe: (s) =>
    `SwinIR ${s.variant} x${s.scale} (embed ${s.embedDim}, depths ${s.depths.join('/')}, heads ${s.numHeads.join('/')}, window ${s.windowSize}, mlp ${s.mlpRatio}, ${s.resiConnection}${s.imgRange === 1 ? '' : `, range ${s.imgRange}`}${channelsNote(s)})`,
  // The graph reflect-pads to the window, which needs a tile of at least one window.
  tiling: (s) => ({ window: s.windowSize, minSide: s.windowSize, relativeCost: swinirRelativeCost(s) }),
  build: (spec, dict, opts) => buildSwinirOnnx(dict, spec, opts),
};
