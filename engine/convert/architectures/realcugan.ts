/**
 * Real-CUGAN (bilibili/ailab, 2022: UpCunet2x, UpCunet3x, UpCunet4x and UpCunet2x_fast, as spandrel defines them):
 * detection from a state dict and the ONNX graph.
 *
 * Two U-Nets of unpadded ("valid") convolutions: the first upsamples by a transposed conv, the second refines, and
 * their sum (the first's output cropped by 20) is the picture. Because every conv shrinks its input, the input is
 * first reflect-padded by a fixed border (18, 14, 19 or 38 pixels) and, at the bottom/right, to the variant's
 * multiple, in one Pad as the reference does; the output is cropped back. 4× and fast end in a conv + pixel
 * shuffle and add the nearest-upscaled input; fast pixel-unshuffles the padded input first. "pro" models carry a
 * `pro` buffer and work on x · 0.7 + 0.15. The squeeze-excitation blocks pool the whole input, so a tiled
 * picture differs slightly from one run whole (as in every Real-CUGAN runner). Sides the reference cannot pad
 * are edge-extended first here, and cropped away with the rest.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import {
  attr,
  constant,
  convFrom,
  cropToScaled,
  dims,
  finishModel,
  GraphBuilder,
  imagePorts,
  int64Const,
  pixelShuffle,
  pixelUnshuffle,
  Weights,
} from '../graph/graphOps.js';
import type { StateDict } from '../checkpoint/stateDict.js';

export type RealCuganVariant = 'UpCunet2x' | 'UpCunet3x' | 'UpCunet4x' | 'UpCunet2x_fast';

export interface RealCuganSpec {
  kind: 'realcugan';
  variant: RealCuganVariant;
  inChannels: number;
  outChannels: number;
  /** x · 0.7 + 0.15 in, (y − 0.15) / 0.7 out (the `pro` buffer). */
  pro: boolean;
  scale: number;
}

/** Per variant: the reflect border, the multiple the padded side must reach, and the scale. */
const LAYOUT: Record<RealCuganVariant, { border: number; multiple: number; scale: number }> = {
  UpCunet2x: { border: 18, multiple: 2, scale: 2 },
  UpCunet3x: { border: 14, multiple: 4, scale: 3 },
  UpCunet4x: { border: 19, multiple: 2, scale: 4 },
  // The reference needs sides of a multiple of 4 here (it fails on others); padding to 4 runs every side.
  UpCunet2x_fast: { border: 38, multiple: 4, scale: 2 },
};

const LRELU_SLOPE = 0.1;
const PRO_GAIN = 0.7;
const PRO_OFFSET = 0.15;

const SIGNATURE = [
  'unet1.conv1.conv.0.weight',
  'unet1.conv1_down.weight',
  'unet1.conv2.seblock.conv1.weight',
  'unet1.conv2_up.weight',
  'unet1.conv_bottom.weight',
  'unet2.conv1.conv.0.weight',
  'unet2.conv3.seblock.conv1.weight',
  'unet2.conv4_up.weight',
  'unet2.conv5.weight',
  'unet2.conv_bottom.weight',
];

export const looksLikeRealCugan = (dict: StateDict): boolean => SIGNATURE.every((k) => dict.has(k));

export function detectRealCugan(dict: StateDict): RealCuganSpec {
  const w = new Weights(dict, 'Real-CUGAN');
  const pro = dict.has('pro');
  const inputs = w.get('unet1.conv1.conv.0.weight').shape[1]!;
  if (dict.has('conv_final.weight')) {
    const outChannels = w.get('conv_final.weight').shape[0]! / 4;
    if (!Number.isInteger(outChannels)) {
      throw new UnsupportedArchitectureError('Real-CUGAN conv_final does not feed a 2× pixel shuffle');
    }
    // spandrel's rule: a first U-Net taking 4× the output channels is the fast 2× (pixel-unshuffled input).
    if (outChannels * 4 === inputs) {
      if (pro) throw new UnsupportedArchitectureError('a "pro" UpCunet2x_fast does not exist in Real-CUGAN');
      return { kind: 'realcugan', variant: 'UpCunet2x_fast', inChannels: outChannels, outChannels, pro, scale: 2 };
    }
    return { kind: 'realcugan', variant: 'UpCunet4x', inChannels: inputs, outChannels, pro, scale: 4 };
  }
  const variant = w.get('unet1.conv_bottom.weight').shape[2] === 5 ? 'UpCunet3x' : 'UpCunet2x';
  const outChannels = w.get('unet2.conv_bottom.weight').shape[0]!;
  if (outChannels !== inputs) {
    throw new UnsupportedArchitectureError(
      `Real-CUGAN ${variant} with ${inputs} input and ${outChannels} output channels cannot run (its second U-Net takes the first's output)`,
    );
  }
  return { kind: 'realcugan', variant, inChannels: inputs, outChannels, pro, scale: LAYOUT[variant].scale };
}

export function buildRealCuganOnnx(spec: RealCuganSpec, dict: StateDict, opts: BuildOptions = {}): Uint8Array {
  const w = new Weights(dict, 'Real-CUGAN');
  const g = new GraphBuilder('Real-CUGAN');
  const { border, multiple, scale } = LAYOUT[spec.variant];
  const conv = (x: string, prefix: string): string => convFrom(g, w, x, prefix, { pad: 0 });
  const down = (x: string, prefix: string): string => convFrom(g, w, x, prefix, { pad: 0, stride: 2 });
  const lrelu = (x: string): string => g.node('LeakyRelu', [x], { alpha: attr.float(LRELU_SLOPE) });
  const add = (a: string, b: string): string => g.node('Add', [a, b]);
  const crop = (x: string, n: number): string =>
    g.node('Slice', [x, int64Const(g, [n, n]), int64Const(g, [-n, -n]), int64Const(g, [2, 3])]);
  const deconv = (x: string, prefix: string, stride: number, pad: number): string => {
    const wt = w.get(`${prefix}.weight`);
    const bt = w.get(`${prefix}.bias`);
    const k = wt.shape[2]!;
    return g.node(
      'ConvTranspose',
      [x, g.weight(`${prefix}.weight`, wt.shape, wt.data), g.weight(`${prefix}.bias`, [bt.data.length], bt.data)],
      { kernel_shape: attr.ints([k, k]), strides: attr.ints([stride, stride]), pads: attr.ints([pad, pad, pad, pad]) },
    );
  };
  const unetConv = (x: string, prefix: string, se: boolean): string => {
    const z = lrelu(conv(lrelu(conv(x, `${prefix}.conv.0`)), `${prefix}.conv.2`));
    if (!se) return z;
    const pooled = g.node('GlobalAveragePool', [z]);
    const s = conv(g.node('Relu', [conv(pooled, `${prefix}.seblock.conv1`)]), `${prefix}.seblock.conv2`);
    return g.node('Mul', [z, g.node('Sigmoid', [s])]);
  };
  const unet1 = (x: string): string => {
    const x1 = unetConv(x, 'unet1.conv1', false);
    let x2 = unetConv(lrelu(down(x1, 'unet1.conv1_down')), 'unet1.conv2', true);
    x2 = lrelu(deconv(x2, 'unet1.conv2_up', 2, 0));
    const x3 = lrelu(conv(add(crop(x1, 4), x2), 'unet1.conv3'));
    if (spec.variant === 'UpCunet3x') return deconv(x3, 'unet1.conv_bottom', 3, 2);
    return deconv(x3, 'unet1.conv_bottom', 2, 3);
  };
  const unet2 = (x: string): string => {
    const x1 = unetConv(x, 'unet2.conv1', false);
    const x2 = unetConv(lrelu(down(x1, 'unet2.conv1_down')), 'unet2.conv2', true);
    let x3 = unetConv(lrelu(down(x2, 'unet2.conv2_down')), 'unet2.conv3', true);
    x3 = lrelu(deconv(x3, 'unet2.conv3_up', 2, 0));
    const x4 = lrelu(deconv(unetConv(add(crop(x2, 4), x3), 'unet2.conv4', true), 'unet2.conv4_up', 2, 0));
    return conv(lrelu(conv(add(crop(x1, 16), x4), 'unet2.conv5')), 'unet2.conv_bottom');
  };

  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  let x = ports.input;
  if (spec.pro) x = add(g.node('Mul', [x, constant(g, PRO_GAIN)]), constant(g, PRO_OFFSET));
  const x00 = x;
  // The reference reflects border + (the bottom/right padding to the multiple) pixels in one Pad, which needs a
  // side larger than that; a side that is not (only tiny ones, or UpCunet2x_fast's off-multiple sides, which the
  // reference cannot run at all) is edge-extended to a multiple beyond the border first.
  const m = int64Const(g, [multiple]);
  const extraTo = (side: string): string => g.node('Mod', [g.node('Sub', [m, g.node('Mod', [side, m])]), m]);
  const hw = dims(g, x, 2, 4);
  const hwExtra = extraTo(hw);
  const tooSmall = g.node('LessOrEqual', [hw, g.node('Add', [hwExtra, int64Const(g, [border, border])])]);
  const firstMultiple = (Math.floor(border / multiple) + 1) * multiple;
  const target = g.node('Max', [g.node('Add', [hw, hwExtra]), int64Const(g, [firstMultiple, firstMultiple])]);
  const grow = g.node('Where', [tooSmall, g.node('Sub', [target, hw]), int64Const(g, [0, 0])]);
  x = g.node('Pad', [x, g.node('Concat', [int64Const(g, [0, 0, 0, 0, 0, 0]), grow], { axis: attr.int(0) })], {
    mode: attr.string('edge'),
  });
  const pads = g.node(
    'Concat',
    [
      int64Const(g, [0, 0, border, border, 0, 0]),
      g.node('Add', [extraTo(dims(g, x, 2, 4)), int64Const(g, [border, border])]),
    ],
    { axis: attr.int(0) },
  );
  x = g.node('Pad', [x, pads], { mode: attr.string('reflect') });
  if (spec.variant === 'UpCunet2x_fast') x = pixelUnshuffle(g, x, 2, spec.inChannels);
  const u1 = unet1(x);
  x = add(unet2(u1), crop(u1, 20));
  const fourOrFast = spec.variant === 'UpCunet4x' || spec.variant === 'UpCunet2x_fast';
  if (fourOrFast) x = pixelShuffle(g, crop(conv(x, 'conv_final'), 1), 2);
  x = cropToScaled(g, x, x00, scale);
  if (fourOrFast) x = add(x, g.resizeNearest(x00, scale, scale));
  if (spec.pro) x = g.node('Div', [g.node('Sub', [x, constant(g, PRO_OFFSET)]), constant(g, PRO_GAIN)]);
  return finishModel(g, ports, x, spec);
}

/**
 * CPU cost relative to SRVGGNetCompact: `npm run bench -- --only arch` on the loaded shared machine (two runs,
 * 2026-11-27: 1.4/0.6×, 1.3/1.0×, 1.0/0.8×, 0.6/0.3×), averaged and rounded up towards the multiply-add estimate
 * (the second U-Net runs at the first's output resolution, so 3× costs most; fast runs at half resolution).
 */
const COST: Record<RealCuganVariant, number> = { UpCunet2x: 1, UpCunet3x: 1.5, UpCunet4x: 1, UpCunet2x_fast: 0.4 };

export const realcugan: Architecture<RealCuganSpec> = {
  kind: 'realcugan',
  name: 'Real-CUGAN',
  openModelDb: ['real-cugan', 'cugan'],
  detect: (dict) => (looksLikeRealCugan(dict) ? detectRealCugan(dict) : undefined),
  describe: (s) => `Real-CUGAN x${s.scale} (${s.variant}${s.pro ? ', pro' : ''}${channelsNote(s)})`,
  tiling: (s) => ({ window: LAYOUT[s.variant].multiple, minSide: 1, relativeCost: COST[s.variant] }),
  build: (spec, dict, opts) => buildRealCuganOnnx(spec, dict, opts),
};
