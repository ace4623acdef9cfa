/**
 * OmniSR (Omni Aggregation Networks for Lightweight Image Super-Resolution, Wang et al. CVPR 2023;
 * Francis0625/Omni-SR): detection from a state dict and the ONNX graph.
 *
 * The input is zero-padded at the bottom/right to a multiple of the window (as the reference's
 * check_image_size) and the output cropped back. Each OSA block is: MBConv (with squeeze-excitation) →
 * block window attention (ws×ws neighbours, relative position bias) → gated conv FFN → channel attention per
 * window → gated FFN → grid attention (pixels H/ws apart) → gated FFN. Each group of blocks ends with a 1×1
 * conv, the group's skip and ESA (enhanced spatial attention). The relative position bias is gathered from its
 * table at conversion time into a constant [heads, ws², ws²] added to the attention logits.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import {
  attr,
  channelLayerNorm,
  constant,
  convFrom,
  cropToScaled,
  dims,
  finishModel,
  gelu,
  GraphBuilder,
  imagePorts,
  int64Const,
  padToMultiple,
  pixelShuffle,
  scaleAndChannels,
  silu,
  Weights,
} from '../graph/graphOps.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

/** OmniSR: residual groups of OSA blocks (block/grid window attention + channel attention) and ESA. */
export interface OmniSrSpec {
  kind: 'omnisr';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  /** OSA blocks per group. */
  blockNum: number;
  /** Residual groups (OSAG). */
  resNum: number;
  windowSize: number;
  /** Relative position bias in the window attention. */
  pe: boolean;
  bias: boolean;
  scale: number;
}

/** Heads of the channel attention (fixed by the architecture, also visible in `temperature`). */
const CHANNEL_HEADS = 4;
/** nn.LayerNorm's default eps (window attention pre-norm) and LayerNorm2d's (conv pre-norms). */
const LN_EPS = 1e-5;
const LN2D_EPS = 1e-6;

const BLOCK = 'residual_layer.0.residual_layer.0.layer';
/** ESA's stride-2 3×3 conv then 7×7 max pool need 16 pixels; smaller inputs are padded up to it. */
export const OMNISR_MIN_SIDE = 16;
/** Released OmniSR models use 8; 64 bounds the bias the converter expands. */
const MAX_WINDOW = 64;

export function looksLikeOmniSr(dict: StateDict): boolean {
  return dict.has(`${BLOCK}.0.fn.0.weight`) && dict.has('input.weight') && dict.has('up.0.weight');
}

export function detectOmniSr(dict: StateDict): OmniSrSpec {
  const w = new Weights(dict, 'OmniSR');
  const input = w.get('input.weight').shape;
  const numFeat = input[0]!;
  const inChannels = input[1]!;
  const up = w.get('up.0.weight').shape[0]!;
  const sc = scaleAndChannels(up, inChannels);
  if (!sc) throw new UnsupportedArchitectureError(`OmniSR upsampler has ${up} outputs: no integer scale`);
  const resNum = w.seqLen('residual_layer');
  const blockNum = w.seqLen('residual_layer.0.residual_layer') - 1;
  if (resNum < 1 || blockNum < 1) throw new UnsupportedArchitectureError('OmniSR has no OSA blocks');
  const rel = dict.get(`${BLOCK}.2.fn.rel_pos_bias.weight`);
  let windowSize = 8;
  if (rel) {
    windowSize = Math.round((Math.sqrt(rel.shape[0]!) + 1) / 2);
    if ((2 * windowSize - 1) ** 2 !== rel.shape[0]) {
      throw new UnsupportedArchitectureError(`OmniSR position bias table of ${rel.shape[0]} rows fits no window size`);
    }
    // The gathered bias is heads × ws⁴ floats: a hostile table must not make the converter allocate gigabytes.
    if (windowSize > MAX_WINDOW) {
      throw new UnsupportedArchitectureError(`OmniSR window ${windowSize} is larger than ${MAX_WINDOW}`);
    }
  }
  if (numFeat % 4 !== 0)
    throw new UnsupportedArchitectureError(`OmniSR with ${numFeat} features (not a multiple of 4)`);
  return {
    kind: 'omnisr',
    inChannels,
    outChannels: sc.outChannels,
    numFeat,
    blockNum,
    resNum,
    windowSize,
    pe: rel !== undefined,
    bias: dict.has('input.bias'),
    scale: sc.scale,
  };
}

/** [out, in] → [in, out] so MatMul(x[…, in], Wᵀ) is torch's Linear without bias. */
function linearT(g: GraphBuilder, name: string, t: Tensor): string {
  const [o, i] = t.shape as [number, number];
  const data = new Float32Array(o * i);
  for (let r = 0; r < o; r++) for (let c = 0; c < i; c++) data[c * o + r] = t.data[r * i + c]!;
  return g.weight(`${name}.T`, [i, o], data);
}

/** bias[h, p, q] = table[index(p, q), h] for positions p, q of a ws×ws window (row-major). */
function relativeBias(table: Tensor, ws: number): { dims: number[]; data: Float32Array } {
  const heads = table.shape[1]!;
  const n = ws * ws;
  const data = new Float32Array(heads * n * n);
  for (let p = 0; p < n; p++)
    for (let q = 0; q < n; q++) {
      const dy = Math.floor(p / ws) - Math.floor(q / ws) + ws - 1;
      const dx = (p % ws) - (q % ws) + ws - 1;
      const idx = dy * (2 * ws - 1) + dx;
      for (let h = 0; h < heads; h++) data[(h * n + p) * n + q] = table.data[idx * heads + h]!;
    }
  return { dims: [heads, n, n], data };
}

export function buildOmniSrOnnx(spec: OmniSrSpec, dict: StateDict, opts: BuildOptions = {}): Uint8Array {
  const w = new Weights(dict, 'OmniSR');
  const g = new GraphBuilder('OmniSR');
  const C = spec.numFeat;
  const ws = spec.windowSize;
  const heads = C / Math.floor(C / 4);
  const dh = C / heads;

  const ports = imagePorts(g, spec, opts.rgbPorts ?? false);
  const x0 = padToMultiple(g, ports.input, ws, OMNISR_MIN_SIDE);
  // Window counts of the padded input, for the window reshapes.
  const hw = dims(g, x0, 2, 4);
  const nhw = g.node('Div', [hw, int64Const(g, [ws])]);
  const nh = g.node('Slice', [nhw, int64Const(g, [0]), int64Const(g, [1])]);
  const nw = g.node('Slice', [nhw, int64Const(g, [1]), int64Const(g, [2])]);
  const shape = (parts: Array<number | string>): string =>
    g.node(
      'Concat',
      parts.map((p) => (typeof p === 'number' ? int64Const(g, [p]) : p)),
      { axis: attr.int(0) },
    );
  const full = shape([-1, C, g.node('Mul', [nh, int64Const(g, [ws])]), g.node('Mul', [nw, int64Const(g, [ws])])]);

  const mbconv = (x: string, pre: string): string => {
    let y = gelu(g, convFrom(g, w, x, `${pre}.fn.0`));
    y = gelu(g, convFrom(g, w, y, `${pre}.fn.2`, { group: C }));
    const pooled = g.node('ReduceMean', [y], { axes: attr.ints([2, 3]), keepdims: attr.int(0) });
    const hidden = silu(
      g,
      g.node('MatMul', [pooled, linearT(g, `${pre}.fn.4.gate.1`, w.get(`${pre}.fn.4.gate.1.weight`))]),
    );
    const gate = g.node('Sigmoid', [
      g.node('MatMul', [hidden, linearT(g, `${pre}.fn.4.gate.3`, w.get(`${pre}.fn.4.gate.3.weight`))]),
    ]);
    y = g.node('Mul', [y, g.node('Unsqueeze', [gate, int64Const(g, [2, 3])])]);
    return g.node('Add', [convFrom(g, w, y, `${pre}.fn.5`), x]);
  };

  /** Pre-norm window attention with its residual, on [windows, ws², C]. */
  const windowAttention = (t: string, pre: string): string => {
    const normed = g.node(
      'LayerNormalization',
      [
        t,
        g.weight(`${pre}.norm.weight`, [C], w.get(`${pre}.norm.weight`).data),
        g.weight(`${pre}.norm.bias`, [C], w.get(`${pre}.norm.bias`).data),
      ],
      { axis: attr.int(-1), epsilon: attr.float(LN_EPS) },
    );
    const qkv = g.node('MatMul', [normed, linearT(g, `${pre}.fn.to_qkv`, w.get(`${pre}.fn.to_qkv.weight`))]);
    const headsOf = (i: number): string =>
      g.node(
        'Transpose',
        [
          g.node('Reshape', [
            g.node('Slice', [qkv, int64Const(g, [i * C]), int64Const(g, [(i + 1) * C]), int64Const(g, [2])]),
            int64Const(g, [0, ws * ws, heads, dh]),
          ]),
        ],
        { perm: attr.ints([0, 2, 1, 3]) },
      );
    const q = g.node('Mul', [headsOf(0), constant(g, dh ** -0.5)]);
    const kT = g.node('Transpose', [headsOf(1)], { perm: attr.ints([0, 1, 3, 2]) });
    let sim = g.node('MatMul', [q, kT]);
    if (spec.pe) {
      const b = relativeBias(w.get(`${pre}.fn.rel_pos_bias.weight`), ws);
      sim = g.node('Add', [sim, g.weight(`${pre}.fn.rel_pos_bias.gathered`, b.dims, b.data)]);
    }
    const out = g.node('MatMul', [g.node('Softmax', [sim], { axis: attr.int(-1) }), headsOf(2)]);
    const merged = g.node('Reshape', [
      g.node('Transpose', [out], { perm: attr.ints([0, 2, 1, 3]) }),
      int64Const(g, [0, ws * ws, C]),
    ]);
    return g.node('Add', [
      g.node('MatMul', [merged, linearT(g, `${pre}.fn.to_out.0`, w.get(`${pre}.fn.to_out.0.weight`))]),
      t,
    ]);
  };

  // Block windows: (x w1) (y w2) — neighbours; grid windows: (w1 x) (w2 y) — pixels H/ws apart.
  const blockAttention = (x: string, pre: string, grid: boolean): string => {
    const six = grid ? shape([-1, C, ws, nh, ws, nw]) : shape([-1, C, nh, ws, nw, ws]);
    const toWin = grid ? [0, 3, 5, 2, 4, 1] : [0, 2, 4, 3, 5, 1];
    const fromWin = grid ? [0, 5, 3, 1, 4, 2] : [0, 5, 1, 3, 2, 4];
    const t = g.node('Reshape', [
      g.node('Transpose', [g.node('Reshape', [x, six])], { perm: attr.ints(toWin) }),
      int64Const(g, [-1, ws * ws, C]),
    ]);
    const attended = windowAttention(t, pre);
    const back = g.node('Reshape', [attended, shape([-1, nh, nw, ws, ws, C])]);
    return g.node('Reshape', [g.node('Transpose', [back], { perm: attr.ints(fromWin) }), full]);
  };

  const gatedFfn = (x: string, pre: string): string => {
    const y = convFrom(
      g,
      w,
      convFrom(g, w, channelLayerNorm(g, w, x, `${pre}.norm`, LN2D_EPS), `${pre}.fn.project_in`),
      `${pre}.fn.dwconv`,
      {
        group: 2 * C,
      },
    );
    const a = g.node('Slice', [y, int64Const(g, [0]), int64Const(g, [C]), int64Const(g, [1])]);
    const b = g.node('Slice', [y, int64Const(g, [C]), int64Const(g, [2 * C]), int64Const(g, [1])]);
    return g.node('Add', [convFrom(g, w, g.node('Mul', [gelu(g, a), b]), `${pre}.fn.project_out`), x]);
  };

  /** Transposed attention over each head's channels within each ws×ws window. */
  const channelAttention = (x: string, pre: string): string => {
    const hd = w.get(`${pre}.fn.temperature`).data.length;
    if (hd !== CHANNEL_HEADS && C % hd !== 0) throw new UnsupportedArchitectureError(`OmniSR ${pre}: ${hd} heads`);
    const d = C / hd;
    const qkv = convFrom(
      g,
      w,
      convFrom(g, w, channelLayerNorm(g, w, x, `${pre}.norm`, LN2D_EPS), `${pre}.fn.qkv`),
      `${pre}.fn.qkv_dwconv`,
      {
        group: 3 * C,
      },
    );
    const seven = shape([-1, hd, d, nh, ws, nw, ws]);
    const split = (i: number): string =>
      g.node('Reshape', [
        g.node(
          'Transpose',
          [
            g.node('Reshape', [
              g.node('Slice', [qkv, int64Const(g, [i * C]), int64Const(g, [(i + 1) * C]), int64Const(g, [1])]),
              seven,
            ]),
          ],
          { perm: attr.ints([0, 3, 5, 1, 2, 4, 6]) },
        ),
        int64Const(g, [-1, hd, d, ws * ws]),
      ]);
    // F.normalize: v / max(‖v‖₂, 1e-12) along the window positions.
    const l2norm = (v: string): string =>
      g.node('Div', [
        v,
        g.node('Max', [g.node('ReduceL2', [v], { axes: attr.ints([-1]), keepdims: attr.int(1) }), constant(g, 1e-12)]),
      ]);
    const q = l2norm(split(0));
    const k = l2norm(split(1));
    const temp = w.get(`${pre}.fn.temperature`);
    const attn = g.node('Mul', [
      g.node('MatMul', [q, g.node('Transpose', [k], { perm: attr.ints([0, 1, 3, 2]) })]),
      g.weight(`${pre}.fn.temperature`, [hd, 1, 1], temp.data),
    ]);
    const out = g.node('MatMul', [g.node('Softmax', [attn], { axis: attr.int(-1) }), split(2)]);
    const back = g.node('Transpose', [g.node('Reshape', [out, shape([-1, nh, nw, hd, d, ws, ws])])], {
      perm: attr.ints([0, 3, 4, 1, 5, 2, 6]),
    });
    return g.node('Add', [convFrom(g, w, g.node('Reshape', [back, full]), `${pre}.fn.project_out`), x]);
  };

  const esa = (x: string, pre: string): string => {
    const c1 = convFrom(g, w, x, `${pre}.conv1`);
    const c2 = convFrom(g, w, c1, `${pre}.conv2`, { stride: 2, pad: 0 });
    const pooled = g.node('MaxPool', [c2], { kernel_shape: attr.ints([7, 7]), strides: attr.ints([3, 3]) });
    const c3 = convFrom(g, w, pooled, `${pre}.conv3`);
    const sizes = g.node('Concat', [dims(g, c3, 0, 2), dims(g, x, 2, 4)], { axis: attr.int(0) });
    // torch bilinear, align_corners=False, to an explicit size.
    const upsampled = g.node('Resize', [c3, '', '', sizes], {
      mode: attr.string('linear'),
      coordinate_transformation_mode: attr.string('half_pixel'),
    });
    const m = g.node('Sigmoid', [
      convFrom(g, w, g.node('Add', [upsampled, convFrom(g, w, c1, `${pre}.conv_f`)]), `${pre}.conv4`),
    ]);
    return g.node('Mul', [x, m]);
  };

  const residual = convFrom(g, w, x0, 'input');
  let x = residual;
  for (let r = 0; r < spec.resNum; r++) {
    const groupIn = x;
    for (let b = 0; b < spec.blockNum; b++) {
      const pre = `residual_layer.${r}.residual_layer.${b}.layer`;
      x = mbconv(x, `${pre}.0`);
      x = blockAttention(x, `${pre}.2`, false);
      x = gatedFfn(x, `${pre}.4`);
      x = channelAttention(x, `${pre}.5`);
      x = gatedFfn(x, `${pre}.6`);
      x = blockAttention(x, `${pre}.8`, true);
      x = gatedFfn(x, `${pre}.10`);
    }
    x = convFrom(g, w, x, `residual_layer.${r}.residual_layer.${spec.blockNum}`);
    x = esa(g.node('Add', [x, groupIn]), `residual_layer.${r}.esa`);
  }
  const out = g.node('Add', [convFrom(g, w, x, 'output'), residual]);
  const up = pixelShuffle(g, convFrom(g, w, out, 'up.0'), spec.scale);
  return finishModel(g, ports, cropToScaled(g, up, ports.input, spec.scale), spec);
}

export const omnisr: Architecture<OmniSrSpec> = {
  kind: 'omnisr',
  name: 'OmniSR',
  openModelDb: ['omnisr'],
  detect: (dict) => (looksLikeOmniSr(dict) ? detectOmniSr(dict) : undefined),
  describe: (s) =>
    `OmniSR x${s.scale} (${s.numFeat} feat, ${s.resNum} groups × ${s.blockNum} blocks, window ${s.windowSize}${s.pe ? '' : ', no position bias'}${channelsNote(s)})`,
  // ESA's stride-2 conv and 7×7 max pool need 16 pixels after padding.
  tiling: (s) => ({ window: s.windowSize, minSide: OMNISR_MIN_SIDE, relativeCost: 2.3 }),
  build: (spec, dict, opts) => buildOmniSrOnnx(spec, dict, opts),
};
