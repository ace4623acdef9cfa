/**
 * DITN, the Deployment-friendly Inner-patch Transformer Network (Liu et al. 2023; yongliuy/DITN, Apache-2.0):
 * detection from a state dict and the ONNX graph of DITN_Real, the variant the released models use.
 *
 * sft conv, then UFONE blocks: the map cut into 8×8 patches (a batch of patches), each through inner transformer
 * layers (ITL: channel self-attention over the patch's 64 L2-normalised pixels times a learned temperature, and a
 * gated depth-wise FFN, each branch after tanh and a 1×1 conv, so the FFN's 3×3 conv zero-pads at patch edges),
 * the patches put back, then spatial-attention layers on the whole map (SAL: a 5×5 and a dilated 7×7 depth-wise
 * conv gate scaled per channel, and the same FFN); conv_after_body plus the sft features, and a one-step
 * pixel-shuffle tail to 3 channels (hard-coded upstream). Like DITN's check_image_size, the graph reflect-pads to
 * the patch multiple and crops back.
 */
import { channelsNote, UnsupportedArchitectureError, type Architecture, type BuildOptions } from './architecture.js';
import { finishModel, imagePorts } from '../graph/graphOps.js';
import { attr } from '../graph/onnxWriter.js';
import { fitted } from '../graph/transformerCost.js';
import type { StateDict } from '../checkpoint/stateDict.js';
import { TokenGraph } from '../graph/transformerGraph.js';
import { countSeq } from '../graph/windowAttention.js';

export interface DitnSpec {
  kind: 'ditn';
  inChannels: number;
  outChannels: number;
  scale: number;
  dim: number;
  ufoneBlocks: number;
  itlBlocks: number;
  salBlocks: number;
  /** FFN hidden width over dim. */
  ffnExpansion: number;
  /** Whether the FFNs and the attention's output conv have biases. */
  bias: boolean;
}

/** The ITL patch side: a constructor argument never stored; DITN_Real's check_image_size pads to 8 (lcm of 8, 8). */
const PATCH = 8;
/** DITN_Real's tail always makes RGB. */
const OUT_CHANNELS = 3;
const ITL0 = 'UFONE.0.ITLs.0';

export function looksLikeDitn(dict: StateDict): boolean {
  return (
    dict.has('sft.weight') &&
    dict.has(`${ITL0}.attn.temperature`) &&
    dict.has(`${ITL0}.ffn.project_in.weight`) &&
    dict.has('conv_after_body.weight') &&
    dict.has('upsample.0.weight')
  );
}

export function detectDitn(dict: StateDict): DitnSpec {
  const get = (key: string) => {
    const t = dict.get(key);
    if (!t) throw new UnsupportedArchitectureError(`not a DITN checkpoint: ${key} is missing`);
    return t;
  };
  const [dim, inChannels] = get('sft.weight').shape as [number, number];
  const up = get('upsample.0.weight').shape[0]!;
  const scale = Math.round(Math.sqrt(up / OUT_CHANNELS));
  if (scale * scale * OUT_CHANNELS !== up)
    throw new UnsupportedArchitectureError(`DITN: upsample.0 gives ${up} channels, not 3 × scale²`);
  const hidden2 = get(`${ITL0}.ffn.project_in.weight`).shape[0]!;
  return {
    kind: 'ditn',
    inChannels,
    outChannels: OUT_CHANNELS,
    scale,
    dim,
    ufoneBlocks: countSeq(dict, 'UFONE', 'ITLs.0.attn.temperature'),
    itlBlocks: countSeq(dict, 'UFONE.0.ITLs', 'attn.temperature'),
    salBlocks: countSeq(dict, 'UFONE.0.SALs', 'SDA.scale'),
    ffnExpansion: hidden2 / 2 / dim,
    bias: dict.has(`${ITL0}.attn.project_out.bias`),
  };
}

export function buildDitnOnnx(dict: StateDict, spec: DitnSpec = detectDitn(dict), opts: BuildOptions = {}): Uint8Array {
  const G = new TokenGraph('DITN', dict, 'a DITN checkpoint');
  const C = spec.dim;
  /** Conv2d `prefix` on NCHW with its stored bias if any, 'same' padding (dilated: d·(k−1)/2). */
  const conv = (x: string, prefix: string, opt: { group?: number; dilation?: number } = {}) => {
    const w = G.get(`${prefix}.weight`);
    const b = dict.get(`${prefix}.bias`);
    const k = w.shape[2]!;
    const d = opt.dilation ?? 1;
    const p = (d * (k - 1)) / 2;
    return G.g.conv(
      x,
      G.param(`${prefix}.weight`, w.shape, w.data),
      b ? G.param(`${prefix}.bias`, b.shape, b.data) : null,
      [k, w.shape[3]!],
      [p, p, p, p],
      { group: opt.group, ...(d > 1 ? { dilations: [d, d] as [number, number] } : {}) },
    );
  };
  const tanh = (x: string) => G.node('Tanh', [x]);
  const normalize = (x: string) =>
    G.node('Div', [
      x,
      G.node('Max', [G.node('ReduceL2', [x], { axes: attr.ints([-1]), keepdims: attr.int(1) }), G.scalar(1e-12)]),
    ]);

  /** ISA on patches [P, C, 8, 8]: attention between channels over the patch's pixels. */
  const isa = (x: string, p: string): string => {
    const tokens = G.transpose(G.reshape(x, [0, C, PATCH * PATCH]), [0, 2, 1]); // [P, 64, C]
    const [q, k, v] = G.split(G.dense(tokens, `${p}.qkv`), 2, [C, C, C]).map((t) => G.transpose(t, [0, 2, 1]));
    const scores = G.node('MatMul', [normalize(q!), G.transpose(normalize(k!), [0, 2, 1])]); // [P, C, C]
    const attn = G.node('Softmax', [G.mul(scores, G.reshape(G.weightOf(`${p}.temperature`), [1]))], {
      axis: attr.int(-1),
    });
    return conv(G.reshape(G.node('MatMul', [attn, v!]), [0, C, PATCH, PATCH]), `${p}.project_out`);
  };

  const sda = (x: string, p: string): string => {
    const [a, y] = G.split(conv(x, `${p}.proj_first.0`), 1, [C, C]);
    let gate = conv(a!, `${p}.DConvs.0`, { group: C });
    gate = conv(conv(gate, `${p}.DConvs.1`, { group: C, dilation: 3 }), `${p}.DConvs.2`);
    return G.mul(conv(G.mul(y!, gate), `${p}.proj_last.0`), G.weightOf(`${p}.scale`));
  };

  const layer = (x: string, p: string, mixer: (y: string, prefix: string) => string, name: string): string => {
    const y = G.add(x, mixer(conv(tanh(x), `${p}.conv1`), `${p}.${name}`));
    return G.add(y, G.gatedDwFfn(conv(tanh(y), `${p}.conv2`), `${p}.ffn`));
  };

  const ports = imagePorts(G.g, spec, opts.rgbPorts ?? false);
  const padded = G.reflectPadToMultiple(ports.input, PATCH);
  const sft = conv(padded.x, 'sft');
  let x = sft;
  const [h, w] = [G.dim(sft, 2), G.dim(sft, 3)];
  const across = [G.node('Div', [h, G.i64([PATCH])]), G.node('Div', [w, G.i64([PATCH])])] as const;
  for (let u = 0; u < spec.ufoneBlocks; u++) {
    // [B, C, H, W] → [B·nH·nW, C, 8, 8], as UFONE's view + permute(0, 2, 4, 1, 3, 5).
    const split = G.reshape(x, G.concat([G.i64([0, C]), across[0], G.i64([PATCH]), across[1], G.i64([PATCH])], 0));
    let patches = G.reshape(G.transpose(split, [0, 2, 4, 1, 3, 5]), [-1, C, PATCH, PATCH]);
    for (let i = 0; i < spec.itlBlocks; i++) patches = layer(patches, `UFONE.${u}.ITLs.${i}`, isa, 'attn');
    const grid = G.reshape(patches, G.concat([G.i64([-1]), across[0], across[1], G.i64([C, PATCH, PATCH])], 0));
    x = G.reshape(G.transpose(grid, [0, 3, 1, 4, 2, 5]), G.concat([G.i64([0, C]), h, w], 0));
    for (let i = 0; i < spec.salBlocks; i++) x = layer(x, `UFONE.${u}.SALs.${i}`, sda, 'SDA');
  }
  const body = G.add(conv(x, 'conv_after_body'), sft);
  let out = conv(body, 'upsample.0');
  if (spec.scale > 1)
    out = G.node('DepthToSpace', [out], { blocksize: attr.int(spec.scale), mode: attr.string('CRD') });
  return finishModel(G.g, ports, G.cropToScaled(out, padded.h, padded.w, spec.scale), spec);
}

/**
 * The tile planner's cost: multiply-adds per input pixel from the layers (graph/transformerCost.ts's MAC factor)
 * plus a per-layer term for the memory-bound work (patch transposes, tanh, normalisations) fitted to one bench
 * run: the released DITN (60 wide, 4 + 4 layers) measured 1.2× SRVGGNetCompact on a 256² tile
 * (`CRISP_BENCH_ARCH=DITN npm run bench -- --only arch`, 2026-11-27, load ~14).
 */
const DITN_FIT = { macs: 1.3, perScore: 0.09 };

function ditnRelativeCost(s: DitnSpec): number {
  const c = s.dim;
  const hidden = c * s.ffnExpansion;
  const ffn = 2 * c * hidden + 9 * 2 * hidden + hidden * c;
  const itl = 2 * c * c + 3 * c * c + 2 * c * c + c * c + ffn;
  const sal = 2 * c * c + 2 * c * c + (25 + 49) * c + c * c + c * c + ffn;
  const blocks = s.ufoneBlocks * (s.itlBlocks + s.salBlocks);
  const macs =
    9 * s.inChannels * c +
    s.ufoneBlocks * (s.itlBlocks * itl + s.salBlocks * sal) +
    9 * c * c +
    9 * c * OUT_CHANNELS * s.scale ** 2;
  return fitted(macs, blocks, DITN_FIT);
}

export const ditn: Architecture<DitnSpec> = {
  kind: 'ditn',
  name: 'DITN',
  openModelDb: ['ditn'],
  detect: (dict) => (looksLikeDitn(dict) ? detectDitn(dict) : undefined),
  describe: (s) =>
    `DITN x${s.scale} (${s.dim} dim, ${s.ufoneBlocks} UFONE of ${s.itlBlocks} ITL + ${s.salBlocks} SAL, ffn ${s.ffnExpansion}${s.bias ? ', bias' : ''}${channelsNote(s)})`,
  // The graph reflect-pads to the 8-pixel patch (and repeats the edge where a reflection cannot reach).
  tiling: (s) => ({ window: PATCH, minSide: 1, relativeCost: ditnRelativeCost(s) }),
  build: (spec, dict, opts) => buildDitnOnnx(dict, spec, opts),
};
