/**
 * DySample (Liu et al. 2023, "Learning to Upsample by Learning to Sample"; spandrel's `__arch_helpers/dysample.py`)
 * as an ONNX subgraph: the upsampler RealPLKSR and MoSR share. It predicts a sampling offset per output pixel,
 * turns offsets into a grid in [-1, 1] and bilinearly samples each channel group (GridSample, border padding,
 * align_corners off, as torch's grid_sample call), then an optional 1×1 end conv.
 */
import { UnsupportedArchitectureError } from '../architectures/architecture.js';
import { attr, constant, convFrom, dims, GraphBuilder, int64Const, pixelShuffle, Weights } from './graphOps.js';

export interface DySampleShape {
  /** Channels of the sampled input (`in_channels` in the reference). */
  channels: number;
  scale: number;
}

/**
 * The sampling groups of the DySample under `prefix`: its offset conv has 2 · groups · scale² outputs, and the
 * groups must divide the channels.
 */
export function dySampleGroups(w: Weights, prefix: string, shape: DySampleShape): number {
  const s = shape.scale;
  const groups = w.get(`${prefix}.offset.weight`).shape[0]! / (2 * s * s);
  if (!Number.isInteger(groups) || groups < 1 || shape.channels % groups !== 0) {
    throw new UnsupportedArchitectureError(`${w.arch} DySample offset channels do not match its groups`);
  }
  return groups;
}

/** DySample under `prefix` (offset, scope, init_pos, optional end_conv) on `x` ([B, channels, H, W]). */
export function dySample(g: GraphBuilder, w: Weights, x: string, prefix: string, shape: DySampleShape): string {
  const s = shape.scale;
  const cin = shape.channels;
  const groups = dySampleGroups(w, prefix, shape);
  const initPos = w.get(`${prefix}.init_pos`);
  const gs = groups * s * s;
  const offset = g.node('Add', [
    g.node('Mul', [
      g.node('Mul', [convFrom(g, w, x, `${prefix}.offset`), g.node('Sigmoid', [convFrom(g, w, x, `${prefix}.scope`)])]),
      constant(g, 0.5),
    ]),
    g.weight(`${prefix}.init_pos`, [1, initPos.data.length, 1, 1], initPos.data),
  ]);
  // Pixel-centre coordinates (i + 0.5) along W and H, from the input's dynamic size.
  const hw = g.node('Cast', [dims(g, x, 2, 4)], { to: attr.int(1) });
  const axisCoords = (axis: 0 | 1): string => {
    const n = g.node('Squeeze', [
      g.node('Gather', [hw, int64Const(g, [axis])], { axis: attr.int(0) }),
      int64Const(g, [0]),
    ]);
    return g.node('Range', [constant(g, 0.5), g.node('Add', [n, constant(g, 0.5)]), constant(g, 1)]);
  };
  const [ox, oy] = ['x', 'y'].map((_, i) =>
    g.node('Slice', [offset, int64Const(g, [i * gs]), int64Const(g, [(i + 1) * gs]), int64Const(g, [1])]),
  ) as [string, string];
  const hN = g.node('Gather', [hw, int64Const(g, [0])], { axis: attr.int(0) });
  const wN = g.node('Gather', [hw, int64Const(g, [1])], { axis: attr.int(0) });
  const xs = axisCoords(1); // [W]
  const ys = g.node('Unsqueeze', [axisCoords(0), int64Const(g, [1])]); // [H, 1]
  const two = constant(g, 2);
  const one = constant(g, 1);
  // 2 · (coord + offset) / size − 1, torch's normalisation for grid_sample(align_corners=False).
  const norm = (o: string, base: string, size: string): string =>
    g.node('Sub', [
      g.node('Div', [
        g.node('Mul', [g.node('Add', [o, base]), two]),
        g.node('Reshape', [size, int64Const(g, [1, 1, 1, 1])]),
      ]),
      one,
    ]);
  const coords = g.node('Concat', [norm(ox, xs, wN), norm(oy, ys, hN)], { axis: attr.int(1) });
  // [B, 2·G·s², H, W] → PixelShuffle → [B, 2G, sH, sW]; x/y halves → [B, G, sH, sW, 2] → [B·G, sH, sW, 2].
  const shuffled = pixelShuffle(g, coords, s);
  const half = (i: number): string =>
    g.node('Unsqueeze', [
      g.node('Slice', [shuffled, int64Const(g, [i * groups]), int64Const(g, [(i + 1) * groups]), int64Const(g, [1])]),
      int64Const(g, [4]),
    ]);
  const gridShape = g.node('Concat', [int64Const(g, [-1]), dims(g, shuffled, 2, 4), int64Const(g, [2])], {
    axis: attr.int(0),
  });
  const grid = g.node('Reshape', [g.node('Concat', [half(0), half(1)], { axis: attr.int(4) }), gridShape]);
  const grouped = g.node('Reshape', [x, int64Const(g, [-1, cin / groups, 0, 0])]);
  const sampled = g.node('GridSample', [grouped, grid], {
    mode: attr.string('bilinear'),
    padding_mode: attr.string('border'),
    align_corners: attr.int(0),
  });
  const merged = g.node('Reshape', [sampled, int64Const(g, [-1, cin, 0, 0])]);
  return w.has(`${prefix}.end_conv.weight`) ? convFrom(g, w, merged, `${prefix}.end_conv`) : merged;
}
