/**
 * Cross-layer range equalization (Nagel et al., "Data-Free Quantization", 2019) for conv → PReLU → conv.
 *
 * int8 activations share one scale per tensor, but the 64 channels of an SR feature map differ a lot in
 * range (per-channel max from ~1 to ~45 in one tensor), so narrow channels get only a few levels. PReLU is
 * positively homogeneous per channel (PReLU(s·x) = s·PReLU(x) for s > 0), so multiplying output channel c
 * of the first conv (weights and bias) by s_c and dividing input channel c of the next conv's weights by s_c
 * leaves the network's function unchanged while stretching channel c's activations by s_c. s_c =
 * (R / r_c)^α moves each channel towards the widest one; α < 1 leaves part of the imbalance, because the
 * divided weights of the next conv lose int8 precision in turn.
 */
import { editOnnx, type NewTensor } from '../../core/onnx/onnxEdit.js';
import { equalizablePairs } from '../../core/onnx/equalizablePairs.js';
import { ONNX_FLOAT, readOnnx, tensorFloats } from '../../core/onnx/onnxReader.js';

/**
 * Applies per-channel scales to each pair. `channelRange(tensor)` gives a per-channel magnitude (e.g. max
 * |x| over calibration) of a pair's tensors; the larger of the pair's tensors is used per channel.
 */
export function equalizeModel(
  model: Uint8Array,
  channelRange: (tensor: string) => Float32Array | undefined,
  alpha = 0.5,
): Uint8Array {
  const info = readOnnx(model);
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const weights = new Map<string, { dims: number[]; data: Float32Array }>();
  const get = (name: string) => {
    let w = weights.get(name);
    if (!w) {
      const t = inits.get(name)!;
      w = { dims: t.dims, data: Float32Array.from(tensorFloats(t)) };
      weights.set(name, w);
    }
    return w;
  };
  for (const p of equalizablePairs(info)) {
    const ranges = p.tensors.map(channelRange);
    if (ranges.some((r) => !r)) continue;
    const channels = ranges[0]!.length;
    const r = new Float32Array(channels).map((_, c) => Math.max(...ranges.map((x) => x![c]!)));
    const widest = Math.max(...r);
    if (!(widest > 0)) continue;
    // Dead channels (always 0) are left alone; the cap keeps a nearly dead channel from exploding.
    const s = new Float32Array(channels).map((_, c) => (r[c]! > 0 ? Math.min(64, (widest / r[c]!) ** alpha) : 1));
    const a = info.nodes[p.first]!;
    const wa = get(a.inputs[1]!);
    if (wa.dims[0] !== channels) continue;
    const perOut = wa.data.length / channels;
    for (let c = 0; c < channels; c++) for (let k = 0; k < perOut; k++) wa.data[c * perOut + k]! *= s[c]!;
    if (a.inputs[2]) {
      const ba = get(a.inputs[2]);
      for (let c = 0; c < channels; c++) ba.data[c]! *= s[c]!;
    }
    const b = info.nodes[p.second]!;
    const wb = get(b.inputs[1]!);
    const [outB = 0, inB = 0, kh = 1, kw = 1] = wb.dims;
    if (inB !== channels) continue;
    for (let o = 0; o < outB; o++)
      for (let c = 0; c < channels; c++)
        for (let k = 0; k < kh * kw; k++) wb.data[(o * inB + c) * kh * kw + k]! /= s[c]!;
  }
  const added: NewTensor[] = [...weights].map(([name, w]) => ({
    name,
    dims: w.dims,
    dataType: ONNX_FLOAT,
    raw: new Uint8Array(w.data.buffer),
  }));
  return editOnnx(model, { dropInitializers: new Set(weights.keys()), addInitializers: added });
}
