/**
 * RCAN (Residual Channel Attention Networks, Zhang et al. ECCV 2018; yulunzhang/RCAN, and traiNNer-redux's
 * variant): detection from a state dict and the ONNX graph.
 *
 * Residual groups of RCABs (conv → ReLU → conv → channel attention, plus the block's input), each group closed
 * by a conv and its own skip; a long skip over all groups; a pixel-shuffle tail. The channel attention pools the
 * whole input, so a tiled picture differs slightly from one run whole (as in every RCAN runner). With `norm` the
 * input is scaled to 0–255 and the DIV2K mean taken off by the checkpoint's own 1×1 `sub_mean` conv (put back by
 * `add_mean`). traiNNer-redux's 1× and 2× models pixel-unshuffle the input into a 4× network
 * (`unshuffle_mod`): the graph reflect-pads to the factor first and crops back, as the reference does.
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
  finishModel,
  GraphBuilder,
  imagePorts,
  pixelShuffle,
  pixelUnshuffle,
  Weights,
} from '../graph/graphOps.js';
import { WindowGraph } from '../graph/windowAttention.js';
import type { StateDict } from '../checkpoint/stateDict.js';

export interface RcanSpec {
  kind: 'rcan';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  /** Residual groups, and RCABs per group (released RCAN: 10 × 20). */
  numGroups: number;
  numBlocks: number;
  /** Channel-attention squeeze: numFeat / reduction channels (released: 16). */
  reduction: number;
  kernelSize: number;
  /** 0–255 range and DIV2K mean shift (`sub_mean` / `add_mean` in the checkpoint). */
  norm: boolean;
  /** Pixel-unshuffle factor in front of a 4× network (traiNNer-redux unshuffle_mod; 1 = none). */
  unshuffle: number;
  /** The pixel-shuffle factors of the tail, in order (2, 2 for 4×; 3 for 3×). */
  upsample: number[];
  scale: number;
}

const RGB_RANGE = 255;

export function looksLikeRcan(dict: StateDict): boolean {
  return (
    (dict.has('head.0.weight') || dict.has('head.1.weight')) &&
    ['tail.1.weight', 'body.0.body.0.body.0.weight', 'body.0.body.0.body.3.conv_du.0.weight'].every((k) => dict.has(k))
  );
}

export function detectRcan(dict: StateDict): RcanSpec {
  const w = new Weights(dict, 'RCAN');
  const numGroups = w.seqLen('body') - 1;
  const numBlocks = w.seqLen('body.0.body') - 1;
  if (numGroups < 1 || numBlocks < 1)
    throw new UnsupportedArchitectureError('this RCAN checkpoint has no residual groups');
  const colors = w.get('tail.1.weight').shape[0]!;
  const upsample: number[] = [];
  let numFeat = 0;
  for (let i = 0; dict.has(`tail.0.${i}.weight`); i += 2) {
    const [out, inp] = w.get(`tail.0.${i}.weight`).shape as [number, number];
    const r = Math.round(Math.sqrt(out / inp));
    if (r * r * inp !== out || r < 2) {
      throw new UnsupportedArchitectureError(`RCAN tail.0.${i} maps ${inp} to ${out} channels: not a pixel shuffle`);
    }
    upsample.push(r);
    numFeat = inp;
  }
  if (upsample.length === 0) throw new UnsupportedArchitectureError('this RCAN checkpoint lacks tail.0.0.weight');
  const inner = upsample.reduce((a, b) => a * b, 1);
  const unshuffled = dict.has('head.1.weight');
  const head = w.get(unshuffled ? 'head.1.weight' : 'head.0.weight').shape;
  const unshuffle = unshuffled ? Math.round(Math.sqrt(head[1]! / colors)) : 1;
  if (unshuffle * unshuffle * colors !== head[1]! || inner % unshuffle !== 0) {
    throw new UnsupportedArchitectureError(
      `RCAN's head takes ${head[1]} channels for ${colors}-channel images with a ${inner}× tail: no integer scale`,
    );
  }
  const norm = dict.has('sub_mean.weight');
  if (norm && colors !== 3) {
    throw new UnsupportedArchitectureError(
      `RCAN with ${colors} channels and the RGB mean shift cannot run (the mean has 3 channels)`,
    );
  }
  const squeeze = w.get('body.0.body.0.body.3.conv_du.0.weight').shape[0]!;
  return {
    kind: 'rcan',
    inChannels: colors,
    outChannels: colors,
    numFeat,
    numGroups,
    numBlocks,
    reduction: numFeat / squeeze,
    kernelSize: head[3]!,
    norm,
    unshuffle,
    upsample,
    scale: inner / unshuffle,
  };
}

export function buildRcanOnnx(spec: RcanSpec, dict: StateDict, opts: BuildOptions = {}): Uint8Array {
  const w = new Weights(dict, 'RCAN');
  const g = new GraphBuilder('RCAN');
  const conv = (x: string, prefix: string): string => convFrom(g, w, x, prefix);
  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  const wg = new WindowGraph(g);
  let x = ports.input;
  let size: { h: string; w: string } | null = null;
  if (spec.unshuffle > 1) {
    const padded = wg.reflectPadToMultiple(x, spec.unshuffle);
    x = padded.x;
    size = padded;
  }
  if (spec.norm) x = conv(g.node('Mul', [x, constant(g, RGB_RANGE)]), 'sub_mean');
  x = spec.unshuffle > 1 ? conv(pixelUnshuffle(g, x, spec.unshuffle, spec.inChannels), 'head.1') : conv(x, 'head.0');
  const head = x;
  for (let gi = 0; gi < spec.numGroups; gi++) {
    const groupIn = x;
    for (let b = 0; b < spec.numBlocks; b++) {
      const p = `body.${gi}.body.${b}.body`;
      const y = conv(g.node('Relu', [conv(x, `${p}.0`)]), `${p}.2`);
      const pooled = g.node('GlobalAveragePool', [y]);
      const att = g.node('Sigmoid', [conv(g.node('Relu', [conv(pooled, `${p}.3.conv_du.0`)]), `${p}.3.conv_du.2`)]);
      x = g.node('Add', [g.node('Mul', [y, att]), x]);
    }
    x = g.node('Add', [conv(x, `body.${gi}.body.${spec.numBlocks}`), groupIn]);
  }
  x = g.node('Add', [conv(x, `body.${spec.numGroups}`), head]);
  spec.upsample.forEach((r, i) => {
    x = pixelShuffle(g, conv(x, `tail.0.${2 * i}`), r);
  });
  x = conv(x, 'tail.1');
  if (spec.norm) x = g.node('Div', [conv(x, 'add_mean'), constant(g, RGB_RANGE)]);
  if (size) x = wg.cropToScaled(x, size.h, size.w, spec.scale);
  return finishModel(g, ports, x, spec);
}

export const rcan: Architecture<RcanSpec> = {
  kind: 'rcan',
  name: 'RCAN',
  openModelDb: ['rcan'],
  detect: (dict) => (looksLikeRcan(dict) ? detectRcan(dict) : undefined),
  describe: (s) =>
    `RCAN x${s.scale} (${s.numGroups}×${s.numBlocks} blocks, ${s.numFeat} feat, reduction ${s.reduction}` +
    `${s.norm ? '' : ', no norm'}${s.unshuffle > 1 ? `, unshuffle ${s.unshuffle}` : ''}${channelsNote(s)})`,
  // The released 10 × 20 × 64 RCAN took 0.70 of RRDBNet's time per 256² tile in the same bench run (31 s against
  // 45 s, 2026-11-27; ≈ 16 M against 18 M multiply-adds per pixel at 4×): RRDBNet's 12× scaled by that, rounded up.
  tiling: () => cnnTiling(9),
  build: (spec, dict, opts) => buildRcanOnnx(spec, dict, opts),
};
