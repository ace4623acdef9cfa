/**
 * SRFormer — permuted self-attention (Zhou et al., ICCV 2023; HVision-NKU/SRFormer): detection of SRFormer
 * and SRFormer-light checkpoints (classical ×2/×3/×4, light one-step, real-world nearest+conv ×4 and 1×
 * restoration tails) and the ONNX graph.
 *
 * A SwinIR-shaped network (conv_first, residual groups of blocks with a conv, norm, conv_after_body, tail)
 * whose window attention is "permuted": queries are the ws×ws pixels of a window, while keys and values
 * are compressed to (ws/2)² tokens by moving each 2×2 pixel block into the channels (kv projects to C/2,
 * four neighbours' C/4 slices concatenate to C). The relative position bias is indexed by each query's
 * half-resolution position; shifted blocks (every odd one) mask across the two resolutions. The FFN has a
 * 5×5 depth-wise conv branch. The input is reflect-padded to the window multiple and the output cropped,
 * as SRFormer's own forward does.
 */
import { UnsupportedArchitectureError } from './architecture.js';
import { attr } from './onnxWriter.js';
import { countIndexed, detectUpsampler, TokenGraph, type ResiConnection, type UpsamplerKind } from './nhwcOps.js';
import type { StateDict, Tensor } from './stateDict.js';

export type SrformerVariant = 'SRFormer' | 'SRFormer-light';

export interface SrformerSpec {
  kind: 'srformer';
  variant: SrformerVariant;
  inChannels: number;
  outChannels: number;
  embedDim: number;
  depths: number[];
  heads: number[];
  windowSize: number;
  mlpRatio: number;
  patchNorm: boolean;
  /** Per group, which blocks attend in shifted windows. */
  shifted: boolean[][];
  upsampler: UpsamplerKind;
  resiConnection: ResiConnection;
  scale: number;
}

const ARCH = 'SRFormer';
const RGB_MEAN = [0.4488, 0.4371, 0.404];
const block = (i: number, j: number) => `layers.${i}.residual_group.blocks.${j}`;

export function looksLikeSrformer(dict: StateDict): boolean {
  return (
    dict.has('conv_first.weight') &&
    dict.has(`${block(0, 0)}.attn.kv.weight`) &&
    dict.has(`${block(0, 0)}.attn.q.weight`) &&
    dict.has(`${block(0, 0)}.attn.relative_position_bias_table`)
  );
}

function need(dict: StateDict, key: string): Tensor {
  const t = dict.get(key);
  if (!t) throw new UnsupportedArchitectureError(`not an SRFormer checkpoint: ${key} is missing`);
  return t;
}

export function detectSrformer(dict: StateDict): SrformerSpec {
  if (dict.has('absolute_pos_embed'))
    throw new UnsupportedArchitectureError(
      'SRFormer with an absolute position embedding (ape) is tied to its training size and is not supported',
    );
  const [embedDim, inChannels] = need(dict, 'conv_first.weight').shape as [number, number];
  const layers = countIndexed(dict, 'layers');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    depths.push(countIndexed(dict, `layers.${i}.residual_group.blocks`));
    heads.push(need(dict, `${block(i, 0)}.attn.relative_position_bias_table`).shape[1]!);
  }
  if (layers === 0 || depths.includes(0)) throw new UnsupportedArchitectureError('SRFormer checkpoint without blocks');
  const rows = need(dict, `${block(0, 0)}.attn.relative_position_bias_table`).shape[0]!;
  const half = (Math.round(Math.sqrt(rows)) + 1) / 2;
  const windowSize = 2 * half;
  if ((2 * half - 1) ** 2 !== rows || !Number.isInteger(half) || windowSize < 4)
    throw new UnsupportedArchitectureError(
      `SRFormer bias table of ${rows} rows is not a (ws−1)² table of an even window ≥ 4`,
    );
  for (const [i, h] of heads.entries())
    if (embedDim % h !== 0 || embedDim % 4 !== 0)
      throw new UnsupportedArchitectureError(`SRFormer group ${i}: ${h} heads do not divide ${embedDim} channels`);
  // Shifted blocks carry their mask buffer; without any masks in the file, Swin's rule: every odd block.
  const anyMask = [...dict.keys()].some((k) => k.endsWith('.attn_mask'));
  const shifted = depths.map((d, i) =>
    Array.from({ length: d }, (_, j) => (anyMask ? dict.has(`${block(i, j)}.attn_mask`) : j % 2 === 1)),
  );
  const up = detectUpsampler(dict, inChannels, ARCH);
  return {
    kind: 'srformer',
    variant: up.kind === 'pixelshuffledirect' ? 'SRFormer-light' : 'SRFormer',
    inChannels,
    outChannels: inChannels,
    embedDim,
    depths,
    heads,
    windowSize,
    mlpRatio: need(dict, `${block(0, 0)}.mlp.fc1.weight`).shape[0]! / embedDim,
    patchNorm: dict.has('patch_embed.norm.weight'),
    shifted,
    upsampler: up.kind,
    resiConnection: dict.has('conv_after_body.weight') ? '1conv' : '3conv',
    scale: up.scale,
  };
}

export function describeSrformer(s: SrformerSpec): string {
  const groups = s.depths.every((d) => d === s.depths[0]) ? `${s.depths.length}×${s.depths[0]}` : s.depths.join('+');
  const heads = s.heads.every((h) => h === s.heads[0]) ? `${s.heads[0]}` : s.heads.join('/');
  const tail = s.upsampler === 'none' ? 'restoration' : s.upsampler;
  return `${s.variant} x${s.scale} (${s.embedDim} dim, ${groups} blocks, ${heads} heads, window ${s.windowSize}, mlp ×${s.mlpRatio}, ${tail}, ${s.resiConnection}${s.inChannels !== 3 ? `, ${s.inChannels} channels` : ''})`;
}

/**
 * The bias table gathered for permuted attention: query pixel (r, c) of the ws×ws window sits at (r/2, c/2)
 * of the half-resolution grid its keys live on, so bias[h, i, j] = table[rel((r/2, c/2), key j), h].
 */
function permutedBias(table: Tensor, ws: number): { dims: number[]; data: Float32Array } {
  const pw = ws / 2;
  const heads = table.shape[1]!;
  const n = ws * ws;
  const m = pw * pw;
  const data = new Float32Array(heads * n * m);
  for (let i = 0; i < n; i++) {
    const pr = Math.floor(Math.floor(i / ws) / 2);
    const pc = Math.floor((i % ws) / 2);
    for (let j = 0; j < m; j++) {
      const row = (pr - Math.floor(j / pw) + pw - 1) * (2 * pw - 1) + (pc - (j % pw) + pw - 1);
      for (let h = 0; h < heads; h++) data[(h * n + i) * m + j] = table.data[row * heads + h]!;
    }
  }
  return { dims: [heads, n, m], data };
}

export function buildSrformerOnnx(dict: StateDict, given?: SrformerSpec): { onnx: Uint8Array; spec: SrformerSpec } {
  const spec = given ?? detectSrformer(dict);
  const C = spec.embedDim;
  const ws = spec.windowSize;
  const pw = ws / 2;
  const n = ws * ws;
  const shift = Math.floor(ws / 2);
  const G = new TokenGraph('SRFormer', dict, 'an SRFormer checkpoint');

  const psa = (y: string, p: string, heads: number, shifted: boolean): string => {
    const hd = C / heads;
    const src = shifted ? G.roll(y, -shift, -shift) : y;
    const win = G.windowPartition(src, ws, ws, C);
    // kv: each 2×2 pixel block of the window becomes one token whose channels are the four pixels' C/4 slices.
    const kv = G.node('Reshape', [
      G.node('Transpose', [G.node('Reshape', [G.linear(win, `${p}.attn.kv`), G.ints([-1, pw, 2, pw, 2, 2, C / 4])])], {
        perm: attr.ints([0, 1, 3, 5, 2, 4, 6]),
      }),
      G.ints([-1, n / 4, 2, heads, hd]),
    ]);
    const kvh = G.node('Transpose', [kv], { perm: attr.ints([2, 0, 3, 1, 4]) });
    const [k, v] = [0, 1].map((i) =>
      G.node('Squeeze', [G.node('Gather', [kvh, G.ints([i])], { axis: attr.int(0) }), G.ints([0])]),
    );
    const q = G.node('Transpose', [G.node('Reshape', [G.linear(win, `${p}.attn.q`), G.ints([-1, n, heads, hd])])], {
      perm: attr.ints([0, 2, 1, 3]),
    });
    const bias = permutedBias(G.t(`${p}.attn.relative_position_bias_table`), ws);
    let mask: string | undefined;
    if (shifted) {
      const hp = G.dim(y, 1);
      const wp = G.dim(y, 2);
      const two = G.ints([2]);
      mask = G.labelMask(
        G.windowLabels(hp, wp, ws, ws, shift, shift),
        G.windowLabels(
          G.node('Div', [hp, two]),
          G.node('Div', [wp, two]),
          pw,
          pw,
          Math.floor(shift / 2),
          Math.floor(shift / 2),
        ),
      );
    }
    const o = G.windowAttention(
      G.mul(q, G.scalar(hd ** -0.5)),
      k!,
      v!,
      G.floats(bias.dims, bias.data, `${p}.attn.position_bias`),
      heads,
      mask,
    );
    const merged = G.linear(
      G.node('Reshape', [G.node('Transpose', [o], { perm: attr.ints([0, 2, 1, 3]) }), G.ints([-1, n, C])]),
      `${p}.attn.proj`,
    );
    const img = G.windowReverse(merged, ws, ws, C, y);
    return shifted ? G.roll(img, shift, shift) : img;
  };

  const convFfn = (x: string, p: string): string => {
    const h = G.gelu(G.linear(x, `${p}.fc1`));
    const hidden = G.t(`${p}.fc1.weight`).shape[0]!;
    const dw = G.toNhwc(G.gelu(G.conv(G.toNchw(h), `${p}.dwconv.depthwise_conv.0`, { group: hidden })));
    return G.linear(G.add(h, dw), `${p}.fc2`);
  };

  const h0 = G.dim('input', 2);
  const w0 = G.dim('input', 3);
  const mean = spec.inChannels === 3 ? G.floats([1, 3, 1, 1], RGB_MEAN, 'rgb_mean') : null;
  const padded = G.reflectPadNchw('input', ws);
  const x = mean ? G.node('Sub', [padded, mean]) : padded;
  const shallow = G.conv(x, 'conv_first');
  let t = G.toNhwc(shallow);
  if (spec.patchNorm) t = G.layerNorm(t, 'patch_embed.norm');
  spec.depths.forEach((depth, i) => {
    const res = t;
    for (let j = 0; j < depth; j++) {
      const p = block(i, j);
      t = G.add(t, psa(G.layerNorm(t, `${p}.norm1`), p, spec.heads[i]!, spec.shifted[i]![j]!));
      t = G.add(t, convFfn(G.layerNorm(t, `${p}.norm2`), `${p}.mlp`));
    }
    t = G.add(res, G.toNhwc(G.resiConv(G.toNchw(t), `layers.${i}.conv`, spec.resiConnection)));
  });
  const body = G.add(G.resiConv(G.toNchw(G.layerNorm(t, 'norm')), 'conv_after_body', spec.resiConnection), shallow);
  let out =
    spec.upsampler === 'none' ? G.add(x, G.conv(body, 'conv_last')) : G.upsampleTail(body, spec.upsampler, spec.scale);
  if (mean) out = G.add(out, mean);
  const s = G.ints([spec.scale]);
  G.node(
    'Slice',
    [
      out,
      G.ints([0, 0]),
      G.node('Concat', [G.node('Mul', [h0, s]), G.node('Mul', [w0, s])], { axis: attr.int(0) }),
      G.ints([2, 3]),
    ],
    {},
    'output',
  );
  return {
    onnx: G.g.toBytes({
      inChannels: spec.inChannels,
      outChannels: spec.outChannels,
      producer: 'crisp-convert (SRFormer)',
      doc: JSON.stringify(spec),
    }),
    spec,
  };
}
