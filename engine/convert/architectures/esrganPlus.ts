/**
 * ESRGAN+ (Rakotonirina & Rasoanaivo, ICASSP 2020; ncarraz/ESRGANplus, the "nESRGAN+" models): RRDBNet whose
 * residual dense blocks carry two extra residual paths — a bias-free 1×1 conv of the block's input added to the
 * second conv's output, and that output added to the fourth's. Its Gaussian noise is a training-time layer with
 * no weights, so inference is the plain network. Checkpoints use ESRGAN's original ("old-arch") key layout:
 * model.0 (first conv), model.1.sub.N.RDBk.convJ.0 and .conv1x1 (the RRDBs), model.1.sub.<blocks> (LR conv), an
 * upsample conv every three indices, then the HR conv and the last conv. Inputs of 4× or 16× the output
 * channels are Real-ESRGAN-style pixel-unshuffled 2×/1× models (reflect-padded to the factor, cropped back).
 */
import {
  channelsNote,
  cnnTiling,
  UnsupportedArchitectureError,
  type Architecture,
  type BuildOptions,
} from './architecture.js';
import {
  attr,
  constant,
  convFrom,
  finishModel,
  GraphBuilder,
  imagePorts,
  pixelUnshuffle,
  Weights,
} from '../graph/graphOps.js';
import { WindowGraph } from '../graph/windowAttention.js';
import type { StateDict } from '../checkpoint/stateDict.js';

export interface EsrganPlusSpec {
  kind: 'esrganplus';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  numGrowCh: number;
  numBlocks: number;
  /** model.N indices of the upsample convs (each after a 2× nearest resize), then the HR and last conv. */
  upConvs: number[];
  hrConv: number;
  lastConv: number;
  /** Pixel-unshuffle factor of 1× (4) and 2× (2) models; 1 = none. */
  unshuffle: number;
  scale: number;
}

/** RRDBNet's LeakyReLU slope and residual scaling, fixed by the architecture. */
const LRELU_SLOPE = 0.2;
const RESIDUAL_SCALE = 0.2;
const PLUS_KEY = 'model.1.sub.0.RDB1.conv1x1.weight';

export const looksLikeEsrganPlus = (dict: StateDict): boolean => dict.has('model.0.weight') && dict.has(PLUS_KEY);

export function detectEsrganPlus(dict: StateDict): EsrganPlusSpec {
  const w = new Weights(dict, 'ESRGAN+');
  const first = w.get('model.0.weight').shape;
  const numFeat = first[0]!;
  const numBlocks = w.seqLen('model.1.sub') - 1;
  if (numBlocks < 1 || !dict.has(`model.1.sub.${numBlocks}.weight`)) {
    throw new UnsupportedArchitectureError('this ESRGAN+ checkpoint has no LR conv after its RRDB blocks');
  }
  const top = new Set<number>();
  for (const k of dict.keys()) {
    const m = /^model\.(\d+)\.weight$/.exec(k);
    if (m && Number(m[1]) >= 2) top.add(Number(m[1]));
  }
  const tail = [...top].sort((a, b) => a - b);
  const upConvs = tail.slice(0, -2);
  if (tail.length < 2 || upConvs.some((i, n) => i !== 3 * (n + 1))) {
    throw new UnsupportedArchitectureError(
      `ESRGAN+ layers model.${tail.join(', model.')} are not ESRGAN's upsample / HR / last sequence`,
    );
  }
  const outChannels = w.get(`model.${tail[tail.length - 1]}.weight`).shape[0]!;
  const firstIn = first[1]!;
  const unshuffle = firstIn === outChannels * 16 ? 4 : firstIn === outChannels * 4 ? 2 : 1;
  const scale = 2 ** upConvs.length / unshuffle;
  if (!Number.isInteger(scale)) {
    throw new UnsupportedArchitectureError(
      `ESRGAN+ with ${upConvs.length} upsamplings after a ${unshuffle}× unshuffle has no integer scale`,
    );
  }
  return {
    kind: 'esrganplus',
    inChannels: firstIn / (unshuffle * unshuffle),
    outChannels,
    numFeat,
    numGrowCh: w.get('model.1.sub.0.RDB1.conv1.0.weight').shape[0]!,
    numBlocks,
    upConvs,
    hrConv: tail[tail.length - 2]!,
    lastConv: tail[tail.length - 1]!,
    unshuffle,
    scale,
  };
}

export function buildEsrganPlusOnnx(spec: EsrganPlusSpec, dict: StateDict, opts: BuildOptions = {}): Uint8Array {
  const w = new Weights(dict, 'ESRGAN+');
  const g = new GraphBuilder('ESRGAN+');
  const conv = (x: string, prefix: string): string => convFrom(g, w, x, prefix);
  const lrelu = (x: string): string => g.node('LeakyRelu', [x], { alpha: attr.float(LRELU_SLOPE) });
  const resScale = constant(g, RESIDUAL_SCALE);
  const scaledAdd = (x: string, residual: string): string => g.node('Add', [g.node('Mul', [x, resScale]), residual]);
  const add = (a: string, b: string): string => g.node('Add', [a, b]);
  const cat = (xs: string[]): string => g.node('Concat', xs, { axis: attr.int(1) });

  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  const wg = new WindowGraph(g);
  let x = ports.input;
  let size: { h: string; w: string } | null = null;
  if (spec.unshuffle > 1) {
    const padded = wg.reflectPadToMultiple(x, spec.unshuffle);
    size = padded;
    x = pixelUnshuffle(g, padded.x, spec.unshuffle, spec.inChannels);
  }
  const feat = conv(x, 'model.0');
  x = feat;
  for (let b = 0; b < spec.numBlocks; b++) {
    const blockIn = x;
    for (let r = 1; r <= 3; r++) {
      const p = `model.1.sub.${b}.RDB${r}`;
      const x0 = x;
      const x1 = lrelu(conv(x0, `${p}.conv1.0`));
      const x2 = add(lrelu(conv(cat([x0, x1]), `${p}.conv2.0`)), conv(x0, `${p}.conv1x1`));
      const x3 = lrelu(conv(cat([x0, x1, x2]), `${p}.conv3.0`));
      const x4 = add(lrelu(conv(cat([x0, x1, x2, x3]), `${p}.conv4.0`)), x2);
      x = scaledAdd(conv(cat([x0, x1, x2, x3, x4]), `${p}.conv5.0`), x0);
    }
    x = scaledAdd(x, blockIn);
  }
  x = add(feat, conv(x, `model.1.sub.${spec.numBlocks}`));
  for (const i of spec.upConvs) x = lrelu(conv(g.resizeNearest(x, 2, 2), `model.${i}`));
  x = conv(lrelu(conv(x, `model.${spec.hrConv}`)), `model.${spec.lastConv}`);
  if (size) x = wg.cropToScaled(x, size.h, size.w, spec.scale);
  return finishModel(g, ports, x, spec);
}

export const esrganPlus: Architecture<EsrganPlusSpec> = {
  kind: 'esrganplus',
  name: 'ESRGAN+',
  openModelDb: ['esrgan+'],
  detect: (dict) => (looksLikeEsrganPlus(dict) ? detectEsrganPlus(dict) : undefined),
  describe: (s) =>
    `ESRGAN+ x${s.scale} (${s.numBlocks} blocks, ${s.numFeat} feat, ${s.numGrowCh} grow` +
    `${s.unshuffle > 1 ? `, unshuffle ${s.unshuffle}` : ''}${channelsNote(s)})`,
  // RRDBNet's cost (its 1×1 extra convs add under 1 %).
  tiling: () => cnnTiling(12),
  build: (spec, dict, opts) => buildEsrganPlusOnnx(spec, dict, opts),
};
