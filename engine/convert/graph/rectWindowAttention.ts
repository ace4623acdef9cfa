/**
 * The rectangle-window spatial attention DAT and RGT share (RGT's L-SA is DAT's spatial attention without the
 * interaction module; both come from CAT, zhengchen1999): qkv split into two halves of the channels, attended in
 * H_sp×W_sp and W_sp×H_sp windows with a dynamic position bias (a small MLP of the relative offsets: a constant
 * of the weights, computed here at conversion), shifted by half a window in a fixed pattern of blocks; before
 * windowing, q, k and v are zero-padded to a multiple of the larger window side (inside the attention, so padded
 * tokens take part in the softmax exactly as in PyTorch) and the output cropped back. Also their spatial-gate
 * FFN (fc1 → GELU → one half × depth-wise conv of the LayerNormed other half → fc2). CRAFT's SRWA blocks use the
 * same attention with the network's offsets buffers and, shifted, without a mask (`offsets`, `masked`).
 */
import { UnsupportedArchitectureError } from '../architectures/architecture.js';
import { attr } from './onnxWriter.js';
import type { TokenGraph } from './transformerGraph.js';
import { LAYER_NORM_EPS, relativePositionIndex } from './windowAttention.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

function need(dict: StateDict, key: string, arch: string): Tensor {
  const t = dict.get(key);
  if (!t)
    throw new UnsupportedArchitectureError(
      `not a${/^[AEIOU]/.test(arch) ? 'n' : ''} ${arch} checkpoint: ${key} is missing`,
    );
  return t;
}

/** Blocks whose spatial attention is shifted: the fixed pattern over group and block index. */
export function rectWindowShifted(group: number, block: number): boolean {
  return (group % 2 === 0 && block > 0 && (block - 2) % 4 === 0) || (group % 2 !== 0 && block % 4 === 0);
}

/**
 * The window (split_size) from the first block's rpe_biases, which holds every relative offset (dh, dw) of the
 * first branch's window; the last is (H_sp−1, W_sp−1).
 */
export function splitSizeFromRpe(dict: StateDict, arch: string): [number, number] {
  const rpe = dict.get('layers.0.blocks.0.attn.attns.0.rpe_biases');
  if (!rpe)
    throw new UnsupportedArchitectureError(
      `this ${arch} checkpoint lacks the rpe_biases buffers its window size is read from (was it saved without buffers?)`,
    );
  const rows = rpe.shape[0]!;
  const splitSize: [number, number] = [rpe.data[2 * rows - 2]! + 1, rpe.data[2 * rows - 1]! + 1];
  const [a, b] = splitSize;
  if (!Number.isInteger(a) || !Number.isInteger(b) || a < 2 || b < 2 || Math.max(a, b) % Math.min(a, b) !== 0) {
    throw new UnsupportedArchitectureError(
      `${arch} window ${a}×${b} is not supported (sides ≥ 2, one dividing the other)`,
    );
  }
  if ((2 * a - 1) * (2 * b - 1) !== rows)
    throw new UnsupportedArchitectureError(`${arch} rpe_biases has ${rows} rows, not (2·${a}−1)(2·${b}−1)`);
  return splitSize;
}

/**
 * The dynamic position bias of one window branch, evaluated once: pos3(pos2(pos1(pos_proj(offsets)))), each
 * posK = LayerNorm → ReLU → Linear, then gathered by relative position into [heads, N, N]. `rpeKey`: the
 * offsets buffer (the branch's own rpe_biases in DAT and RGT, the network's biases_h / biases_v in CRAFT).
 */
function positionBias(
  dict: StateDict,
  prefix: string,
  rpeKey: string,
  hs: number,
  ws: number,
  arch: string,
): { dims: number[]; data: Float32Array } {
  const rpe = need(dict, rpeKey, arch);
  const rows = rpe.shape[0]!;
  let x: Float64Array[] = [];
  for (let r = 0; r < rows; r++) x.push(Float64Array.from([rpe.data[2 * r]!, rpe.data[2 * r + 1]!]));
  const linear = (k: string) => {
    const w = need(dict, `${k}.weight`, arch);
    const b = need(dict, `${k}.bias`, arch).data;
    const [out, inp] = w.shape as [number, number];
    x = x.map((v) => {
      const y = new Float64Array(out);
      for (let o = 0; o < out; o++) {
        let s = b[o]!;
        for (let i = 0; i < inp; i++) s += w.data[o * inp + i]! * v[i]!;
        y[o] = s;
      }
      return y;
    });
  };
  const normRelu = (k: string) => {
    const g = need(dict, `${k}.weight`, arch).data;
    const b = need(dict, `${k}.bias`, arch).data;
    x = x.map((v) => {
      const mean = v.reduce((a, c) => a + c, 0) / v.length;
      const variance = v.reduce((a, c) => a + (c - mean) ** 2, 0) / v.length;
      return v.map((c, i) => Math.max(0, ((c - mean) / Math.sqrt(variance + LAYER_NORM_EPS)) * g[i]! + b[i]!));
    });
  };
  linear(`${prefix}.pos.pos_proj`);
  for (const k of ['pos1', 'pos2', 'pos3']) {
    normRelu(`${prefix}.pos.${k}.0`);
    linear(`${prefix}.pos.${k}.2`);
  }
  const heads = x[0]!.length;
  const n = hs * ws;
  const index = relativePositionIndex(hs, ws);
  if (x.length !== (2 * hs - 1) * (2 * ws - 1))
    throw new UnsupportedArchitectureError(`${arch} ${rpeKey} has ${x.length} rows for a ${hs}×${ws} window`);
  const data = new Float32Array(heads * n * n);
  for (let i = 0; i < n * n; i++) {
    const row = x[index[i]!]!;
    for (let h = 0; h < heads; h++) data[h * n * n + i] = row[h]!;
  }
  return { dims: [heads, n, n], data };
}

/** Linear weights with output channels reordered: [q₀ k₀ v₀ q₁ k₁ v₁] (halves of C) instead of [q k v]. */
function branchOrderedQkv(dict: StateDict, prefix: string, c: number, arch: string): StateDict {
  const w = need(dict, `${prefix}.weight`, arch);
  const b = dict.get(`${prefix}.bias`);
  const half = c / 2;
  const order: number[] = [];
  for (const branch of [0, 1])
    for (const part of [0, 1, 2]) for (let i = 0; i < half; i++) order.push(part * c + branch * half + i);
  const wd = new Float32Array(w.data.length);
  order.forEach((src, dst) => wd.set(w.data.subarray(src * c, (src + 1) * c), dst * c));
  const out: StateDict = new Map([[`${prefix}.weight`, { shape: w.shape, data: wd }]]);
  if (b) out.set(`${prefix}.bias`, { shape: b.shape, data: Float32Array.from(order, (src) => b.data[src]!) });
  return out;
}

/** The two branches' shifted-window masks, built on first use and shared by every block (one padded size). */
export type RectWindowMasks = [string | undefined, string | undefined];

export interface RectWindowOptions {
  embedDim: number;
  /** Heads of the block (each branch has half). */
  heads: number;
  splitSize: [number, number];
  shifted: boolean;
  masks: RectWindowMasks;
  arch: string;
  /** False: shifted blocks attend without the shifted-window mask (CRAFT passes none). Default true. */
  masked?: boolean;
  /** The offsets buffer of each branch; default the branch's own `${p}.attns.${branch}.rpe_biases`. */
  offsets?: [string, string];
}

/**
 * Both window branches of the attention `${p}` on the NHWC map `x`: their outputs concatenated ([B, H, W, C],
 * before any proj) and v in its original channel order (for the depth-wise conv branch). The qkv weights are
 * reordered per branch into `weights`, the map `G` reads its tensors from.
 */
export function rectWindowBranches(
  G: TokenGraph,
  weights: StateDict,
  dict: StateDict,
  x: string,
  p: string,
  o: RectWindowOptions,
): { attended: string; v: string } {
  const C = o.embedDim;
  const half = C / 2;
  for (const [k, v] of branchOrderedQkv(dict, `${p}.qkv`, C, o.arch)) weights.set(k, v);
  const bh = Math.floor(o.heads / 2);
  const hd = half / bh;
  const qkv = G.dense(x, `${p}.qkv`);
  const v = G.concat([G.slice(qkv, [C], [C + half], [3]), G.slice(qkv, [2 * C + half], [3 * C], [3])], 3);
  const padded = G.padNhwc(qkv, Math.max(...o.splitSize));
  const [s0, s1] = [Math.floor(o.splitSize[0] / 2), Math.floor(o.splitSize[1] / 2)];
  const outs = G.split(padded, 3, [3 * half, 3 * half]).map((part, branch) => {
    const [hs, ws] = branch === 0 ? o.splitSize : [o.splitSize[1], o.splitSize[0]];
    const [sh, sw] = branch === 0 ? [s0, s1] : [s1, s0];
    const n = hs * ws;
    const src = o.shifted ? G.rollHW(part, -sh, -sw) : part;
    // [B, nWin, N, 3·C/2] → [3, B, nWin, heads, N, d]
    const win = G.transpose(
      G.reshape(G.rectWindowPartition(src, hs, ws, 3 * half), [0, 0, n, 3, bh, hd]),
      [3, 0, 1, 4, 2, 5],
    );
    const [q, k, vv] = [0, 1, 2].map((i) =>
      G.node('Squeeze', [G.node('Gather', [win, G.i64([i])], { axis: attr.int(0) }), G.i64([0])]),
    );
    const masked = o.shifted && o.masked !== false;
    if (masked && !o.masks[branch]) {
      const labels = G.windowLabels(G.dim(padded, 1), G.dim(padded, 2), hs, ws, sh, sw);
      o.masks[branch] = G.labelMask(labels, labels);
    }
    const mask = masked ? o.masks[branch]! : null;
    const rpeKey = o.offsets?.[branch] ?? `${p}.attns.${branch}.rpe_biases`;
    const bias = positionBias(dict, `${p}.attns.${branch}`, rpeKey, hs, ws, o.arch);
    const out = G.attention(
      G.mul(q!, G.scalar(hd ** -0.5)),
      G.transpose(k!, [0, 1, 2, 4, 3]),
      vv!,
      G.param(`${p}.attns.${branch}.position_bias`, bias.dims, bias.data),
      mask,
    );
    const img = G.rectWindowReverse(G.mergeHeads(out, half), hs, ws, half, padded);
    return G.cropNhwc(o.shifted ? G.rollHW(img, sh, sw) : img, G.dim(x, 1), G.dim(x, 2));
  });
  return { attended: G.concat(outs, 3), v };
}

/** The spatial-gate FFN `${p}` (DAT's SGFN, RGT's MLP with its Gate) on an NHWC map. */
export function spatialGateFfn(G: TokenGraph, x: string, p: string): string {
  const hidden = G.get(`${p}.fc1.weight`).shape[0]!;
  const [x1, x2] = G.split(G.gelu(G.dense(x, `${p}.fc1`)), 3, [hidden / 2, hidden / 2]);
  const gate = G.toNhwc(G.conv(G.toNchw(G.norm(x2!, `${p}.sg.norm`)), `${p}.sg.conv`, G.get, { group: hidden / 2 }));
  return G.dense(G.mul(x1!, gate), `${p}.fc2`);
}
