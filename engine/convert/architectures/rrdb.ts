/**
 * ESRGAN / BasicSR RRDBNet: key-layout normalisation, hyper-parameter detection and the ONNX graph.
 * Both layouts are mapped onto BasicSR names (conv_first, body.N.rdbK.convJ, conv_body, conv_upK,
 * conv_hr, conv_last) so one builder serves both.
 */
import { channelsNote, cnnTiling, UnsupportedArchitectureError, type Architecture } from './architecture.js';
import { attr, GraphBuilder } from '../graph/onnxWriter.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

/** ESRGAN / BasicSR RRDBNet. unshuffle is the pixel-unshuffle factor BasicSR applies for x2 (2) and x1 (4). */
export interface RrdbSpec {
  kind: 'rrdb';
  layout: 'esrgan' | 'basicsr';
  inChannels: number;
  outChannels: number;
  numFeat: number;
  numGrowCh: number;
  numBlocks: number;
  numUpsample: number;
  unshuffle: number;
  scale: number;
}

/** RRDBNet's LeakyReLU slope and residual scaling, fixed by the architecture. */
const LRELU_SLOPE = 0.2;
const RESIDUAL_SCALE = 0.2;

export function looksLikeEsrganOld(dict: StateDict): boolean {
  // ESRGAN+'s extra 1×1 convs make it its own architecture (esrganPlus.ts).
  if (dict.has('model.1.sub.0.RDB1.conv1x1.weight')) return false;
  return dict.has('model.0.weight') && [...dict.keys()].some((k) => k.startsWith('model.1.sub.'));
}

export function looksLikeBasicsrRrdb(dict: StateDict): boolean {
  return dict.has('conv_first.weight') && [...dict.keys()].some((k) => /^body\.\d+\.rdb1\./.test(k));
}

/** Maps the original ESRGAN (model.N / RDBk / convJ.0) keys onto BasicSR names. */
export function esrganToBasicsr(dict: StateDict): StateDict {
  const out: StateDict = new Map();
  const top = new Set<number>();
  let bodyIdx = -1;
  for (const k of dict.keys()) {
    const m = /^model\.(\d+)\.(weight|bias)$/.exec(k);
    if (m) top.add(Number(m[1]));
    const s = /^model\.1\.sub\.(\d+)\.(weight|bias)$/.exec(k);
    if (s) bodyIdx = Math.max(bodyIdx, Number(s[1]));
  }
  const tail = [...top].filter((i) => i >= 2).sort((a, b) => a - b);
  if (!top.has(0) || bodyIdx < 0 || tail.length < 2) {
    throw new UnsupportedArchitectureError(
      `ESRGAN-style keys found, but not the expected layout (top-level model indices ${[...top].sort((a, b) => a - b).join(',')})`,
    );
  }
  const names = new Map<number, string>([[0, 'conv_first']]);
  tail.slice(0, -2).forEach((i, n) => names.set(i, `conv_up${n + 1}`));
  names.set(tail[tail.length - 2]!, 'conv_hr');
  names.set(tail[tail.length - 1]!, 'conv_last');
  for (const [k, t] of dict) {
    let m = /^model\.(\d+)\.(weight|bias)$/.exec(k);
    if (m) {
      const name = names.get(Number(m[1]));
      if (name) out.set(`${name}.${m[2]}`, t);
      continue;
    }
    m = /^model\.1\.sub\.(\d+)\.RDB(\d)\.conv(\d)\.0\.(weight|bias)$/.exec(k);
    if (m) {
      out.set(`body.${m[1]}.rdb${m[2]}.conv${m[3]}.${m[4]}`, t);
      continue;
    }
    m = /^model\.1\.sub\.(\d+)\.(weight|bias)$/.exec(k);
    if (m && Number(m[1]) === bodyIdx) {
      out.set(`conv_body.${m[2]}`, t);
      continue;
    }
    throw new UnsupportedArchitectureError(`unexpected key ${k} in an ESRGAN-style state dict`);
  }
  return out;
}

function req(dict: StateDict, k: string): Tensor {
  const t = dict.get(k);
  if (!t) throw new UnsupportedArchitectureError(`RRDBNet state dict lacks ${k}`);
  return t;
}

/** Detects RRDBNet hyper-parameters from a state dict in either layout; returns BasicSR-named weights. */
export function detectRrdb(input: StateDict): { spec: RrdbSpec; weights: StateDict } {
  const layout = looksLikeEsrganOld(input) ? 'esrgan' : 'basicsr';
  const dict = layout === 'esrgan' ? esrganToBasicsr(input) : input;
  const first = req(dict, 'conv_first.weight').shape;
  const last = req(dict, 'conv_last.weight').shape;
  const numFeat = first[0]!;
  const firstIn = first[1]!;
  const outChannels = last[0]!;
  // BasicSR feeds pixel_unshuffle(x, 2) (12 channels) to x2 and pixel_unshuffle(x, 4) (48) to x1 models.
  const inChannels = outChannels;
  const unshuffle = Math.round(Math.sqrt(firstIn / inChannels));
  if (unshuffle * unshuffle * inChannels !== firstIn || ![1, 2, 4].includes(unshuffle)) {
    throw new UnsupportedArchitectureError(
      `RRDBNet conv_first takes ${firstIn} channels, which is not ${inChannels}×(1, 4 or 16)`,
    );
  }
  let numBlocks = 0;
  while (dict.has(`body.${numBlocks}.rdb1.conv1.weight`)) numBlocks++;
  if (numBlocks === 0) throw new UnsupportedArchitectureError('RRDBNet has no RRDB blocks');
  const numGrowCh = req(dict, 'body.0.rdb1.conv1.weight').shape[0]!;
  let numUpsample = 0;
  while (dict.has(`conv_up${numUpsample + 1}.weight`)) numUpsample++;
  const scale = 2 ** numUpsample / unshuffle;
  if (!Number.isInteger(scale) || scale < 1)
    throw new UnsupportedArchitectureError(
      `RRDBNet with ${numUpsample} upsamplings and unshuffle ${unshuffle} has no integer scale`,
    );
  const spec: RrdbSpec = {
    kind: 'rrdb',
    layout,
    inChannels,
    outChannels,
    numFeat,
    numGrowCh,
    numBlocks,
    numUpsample,
    unshuffle,
    scale,
  };
  return { spec, weights: dict };
}

/**
 * torch.pixel_unshuffle orders output channels c·r² + i·r + j; ONNX SpaceToDepth orders them
 * (i·r + j)·C + c. Rather than a shape-dependent Reshape/Transpose (awkward with dynamic H/W), we
 * permute conv_first's input channels so SpaceToDepth feeds it exactly what it was trained on.
 */
function permuteForSpaceToDepth(w: Tensor, channels: number, r: number): Tensor {
  const [o, cin, kh, kw] = w.shape as [number, number, number, number];
  const k = kh * kw;
  const data = new Float32Array(w.data.length);
  for (let oc = 0; oc < o; oc++) {
    for (let c = 0; c < channels; c++) {
      for (let b = 0; b < r * r; b++) {
        const src = (oc * cin + c * r * r + b) * k;
        const dst = (oc * cin + b * channels + c) * k;
        data.set(w.data.subarray(src, src + k), dst);
      }
    }
  }
  return { shape: w.shape, data };
}

export function buildRrdbOnnx(spec: RrdbSpec, dict: StateDict, opts: { producer?: string } = {}): Uint8Array {
  const g = new GraphBuilder('RRDBNet');
  const conv = (x: string, name: string, output?: string, weightOverride?: Tensor): string => {
    const wt = weightOverride ?? req(dict, `${name}.weight`);
    const bt = dict.get(`${name}.bias`);
    const w = g.weight(`${name}.weight`, wt.shape, wt.data);
    const b = bt ? g.weight(`${name}.bias`, bt.shape, bt.data) : null;
    const k = wt.shape[2]!;
    const p = (k - 1) / 2;
    return g.conv(x, w, b, [k, wt.shape[3]!], [p, p, p, p], {}, output);
  };
  const lrelu = (x: string): string => g.node('LeakyRelu', [x], { alpha: attr.float(LRELU_SLOPE) });
  const resScale = g.weight('residual_scale', [], new Float32Array([RESIDUAL_SCALE]));
  const scaledAdd = (x: string, residual: string): string => g.node('Add', [g.node('Mul', [x, resScale]), residual]);

  let feat = 'input';
  let firstW: Tensor | undefined;
  if (spec.unshuffle > 1) {
    feat = g.node('SpaceToDepth', [feat], { blocksize: attr.int(spec.unshuffle) });
    firstW = permuteForSpaceToDepth(req(dict, 'conv_first.weight'), spec.inChannels, spec.unshuffle);
  }
  feat = conv(feat, 'conv_first', undefined, firstW);
  let x = feat;
  for (let b = 0; b < spec.numBlocks; b++) {
    const blockIn = x;
    for (let r = 1; r <= 3; r++) {
      const rdbIn = x;
      const parts = [rdbIn];
      let out = '';
      for (let c = 1; c <= 5; c++) {
        const inp = parts.length === 1 ? parts[0]! : g.node('Concat', [...parts], { axis: attr.int(1) });
        out = conv(inp, `body.${b}.rdb${r}.conv${c}`);
        if (c < 5) {
          out = lrelu(out);
          parts.push(out);
        }
      }
      x = scaledAdd(out, rdbIn);
    }
    x = scaledAdd(x, blockIn);
  }
  feat = g.node('Add', [feat, conv(x, 'conv_body')]);
  for (let u = 1; u <= spec.numUpsample; u++) feat = lrelu(conv(g.resizeNearest(feat, 2, 2), `conv_up${u}`));
  conv(lrelu(conv(feat, 'conv_hr')), 'conv_last', 'output');
  return g.toBytes({
    inChannels: spec.inChannels,
    outChannels: spec.outChannels,
    producer: opts.producer ?? 'crisp-convert',
    doc: JSON.stringify(spec),
  });
}

export const rrdb: Architecture<RrdbSpec> = {
  kind: 'rrdb',
  name: 'RRDBNet',
  openModelDb: ['esrgan'],
  alsoKnownAs: ['ESRGAN', 'BasicSR'],
  detect: (dict) => {
    if (!looksLikeEsrganOld(dict) && !looksLikeBasicsrRrdb(dict)) return undefined;
    // Building it as a plain RRDBNet would silently drop ESRGAN+'s extra paths.
    if (dict.has('body.0.rdb1.conv1x1.weight')) {
      throw new UnsupportedArchitectureError(
        "this is an ESRGAN+ checkpoint with BasicSR key names (body.N.rdbK.conv1x1); Crisp converts ESRGAN+ in ESRGAN's original key layout (model.1.sub.N.RDBk.conv1x1) only",
      );
    }
    return detectRrdb(dict).spec;
  },
  describe: (s) =>
    `RRDBNet x${s.scale} (${s.layout} keys, ${s.numBlocks} blocks, ${s.numFeat} feat, ${s.numGrowCh} grow${channelsNote(s)})`,
  tiling: () => cnnTiling(12),
  build: (spec, dict) => buildRrdbOnnx(spec, spec.layout === 'esrgan' ? esrganToBasicsr(dict) : dict),
};
