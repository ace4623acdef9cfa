/**
 * GFPGANv1Clean (GFPGAN v1.3 / v1.4 checkpoints) → an ONNX face restorer in Crisp's face convention:
 * input `1×3×S×S` RGB in [-1, 1], first output the restored face, same shape and range (S = 512 for the
 * released weights). Written from the published architecture (TencentARC/GFPGAN, Apache-2.0):
 *
 * - U-Net encoder: 1×1 conv, ResBlocks down (conv3 → lrelu → bilinear ×½ → conv3 → lrelu, plus a bilinear ×½
 *   1×1 skip), final conv, and one linear layer to a style code per decoder layer (`different_w`).
 * - U-Net decoder: ResBlocks up (bilinear ×2) whose features make the SFT conditions (scale and shift,
 *   two convs each) for the StyleGAN2 decoder.
 * - StyleGAN2 decoder ("clean": no custom CUDA ops): a constant 4×4 input, modulated + demodulated 3×3 convs
 *   (the first of each level after a bilinear ×2), stored noise buffers (`randomize_noise=False`, so the
 *   output is deterministic), bias, leaky ReLU; SFT on the second half of the channels (`sft_half`) after the
 *   first conv of each level; ToRGB (modulated 1×1, no demodulation) summed over levels with a bilinear ×2 skip.
 *
 * Modulation is applied to the input rather than the weights (conv(x·s, W)·d equals conv(x, W·s·d) for
 * batch 1), so every conv keeps constant weights onnxruntime can pre-pack; the demodulation factor
 * d = rsqrt(Σ (W·s)² + ε) is computed from s² and the constant Σ_k W². Every size comes from the tensor shapes.
 */
import { UnsupportedArchitectureError } from './architecture.js';
import { attr, GraphBuilder } from '../graph/onnxWriter.js';
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';

export interface GfpganSpec {
  kind: 'gfpgan';
  outSize: number;
  styleFeatures: number;
  /** Decoder levels above 4×4 (log2(outSize) − 2). */
  levels: number;
  sftHalf: boolean;
  differentW: boolean;
}

const SLOPE = 0.2;

export function looksLikeGfpgan(dict: StateDict): boolean {
  return [...dict.keys()].some((k) => k.startsWith('stylegan_decoder.') || k.startsWith('condition_scale.'));
}

/**
 * The original GFPGANv1 used StyleGAN2 layers with custom CUDA ops (fused bias + activation, EqualConv2d):
 * its keys carry `.activate.bias` and `conv_body_first.0.weight` where the clean version has plain convs.
 */
export function isOriginalGfpganV1(dict: StateDict): boolean {
  return [...dict.keys()].some(
    (k) => k.endsWith('.activate.bias') || k.startsWith('conv_body_first.0.') || k.includes('.modulated_conv.blur.'),
  );
}

export const GFPGAN_V1_UNSUPPORTED =
  'GFPGANv1 (the original, with custom CUDA ops) is not supported: use GFPGAN v1.3 or v1.4';

function need(dict: StateDict, key: string): Tensor {
  const t = dict.get(key);
  if (!t) throw new UnsupportedArchitectureError(`not a GFPGANv1Clean checkpoint: ${key} is missing`);
  return t;
}

function count(dict: StateDict, prefix: string): number {
  let n = 0;
  while (
    dict.has(`${prefix}.${n}.conv1.weight`) ||
    dict.has(`${prefix}.${n}.modulated_conv.weight`) ||
    dict.has(`${prefix}.${n}.0.weight`)
  )
    n++;
  return n;
}

export function detectGfpgan(dict: StateDict): GfpganSpec {
  if (isOriginalGfpganV1(dict)) throw new UnsupportedArchitectureError(GFPGAN_V1_UNSUPPORTED);
  const levels = count(dict, 'conv_body_up');
  const down = count(dict, 'conv_body_down');
  const styleConvs = count(dict, 'stylegan_decoder.style_convs');
  if (levels < 1 || down !== levels || styleConvs !== 2 * levels) {
    throw new UnsupportedArchitectureError(
      `not a GFPGANv1Clean checkpoint: ${down} down blocks, ${levels} up blocks and ${styleConvs} style convs do not match`,
    );
  }
  const styleFeatures = need(dict, 'stylegan_decoder.style_conv1.modulated_conv.modulation.weight').shape[1]!;
  const logSize = levels + 2;
  const linearOut = need(dict, 'final_linear.weight').shape[0]!;
  const differentW = linearOut === (logSize * 2 - 2) * styleFeatures;
  if (!differentW && linearOut !== styleFeatures)
    throw new UnsupportedArchitectureError(`not a GFPGANv1Clean checkpoint: final_linear gives ${linearOut} values`);
  const unetChannels = need(dict, `conv_body_up.${levels - 1}.conv2.weight`).shape[0]!;
  const sftChannels = need(dict, `condition_scale.${levels - 1}.2.weight`).shape[0]!;
  return {
    kind: 'gfpgan',
    outSize: 2 ** logSize,
    styleFeatures,
    levels,
    sftHalf: sftChannels === unetChannels,
    differentW,
  };
}

/** Conv weight [out, in, k, k] from a tensor that may carry a leading 1 (StyleGAN2's [1, out, in, k, k]). */
function convWeight(t: Tensor): { dims: number[]; data: Float32Array } {
  const dims = t.shape.length === 5 ? t.shape.slice(1) : t.shape;
  return { dims, data: t.data };
}

function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

export function buildGfpganOnnx(dict: StateDict): { onnx: Uint8Array; spec: GfpganSpec } {
  const spec = detectGfpgan(dict);
  const g = new GraphBuilder('gfpgan-v1-clean');
  const t = (key: string) => need(dict, key);
  const w = (key: string) => {
    const c = convWeight(t(key));
    return g.weight(key, c.dims, c.data);
  };
  const b = (key: string) => g.weight(key, [t(key).data.length], t(key).data);
  const conv = (x: string, prefix: string, withBias = true) => {
    const k = convWeight(t(`${prefix}.weight`)).dims[2]!;
    const p = (k - 1) / 2;
    return g.conv(x, w(`${prefix}.weight`), withBias ? b(`${prefix}.bias`) : null, [k, k], [p, p, p, p]);
  };
  const lrelu = (x: string) => g.node('LeakyRelu', [x], { alpha: attr.float(SLOPE) });
  let scaleId = 0;
  const resize = (x: string, factor: number) => {
    const scales = g.weight(`resize_scales_${scaleId++}`, [4], new Float32Array([1, 1, factor, factor]));
    // torch F.interpolate(bilinear, align_corners=False) is ONNX's half_pixel linear resize.
    return g.node('Resize', [x, '', scales], {
      mode: attr.string('linear'),
      coordinate_transformation_mode: attr.string('half_pixel'),
    });
  };
  const resBlock = (x: string, prefix: string, factor: number) => {
    let out = lrelu(conv(x, `${prefix}.conv1`));
    out = lrelu(conv(resize(out, factor), `${prefix}.conv2`));
    const skip = conv(resize(x, factor), `${prefix}.skip`, false);
    return g.node('Add', [out, skip]);
  };

  // Encoder.
  let feat = lrelu(conv('input', 'conv_body_first'));
  const skips: string[] = [];
  for (let i = 0; i < spec.levels; i++) {
    feat = resBlock(feat, `conv_body_down.${i}`, 0.5);
    skips.unshift(feat);
  }
  feat = lrelu(conv(feat, 'final_conv'));

  // Style codes: one per decoder layer (different_w), each a [1, F] row.
  const lin = t('final_linear.weight');
  const [linOut, linIn] = lin.shape as [number, number];
  const flat = g.node('Flatten', [feat], { axis: attr.int(1) });
  const codes = g.node('Add', [
    g.node('MatMul', [flat, g.weight('final_linear.weight_t', [linIn, linOut], transpose(lin.data, linOut, linIn))]),
    b('final_linear.bias'),
  ]);
  const F = spec.styleFeatures;
  const latentRows = spec.differentW ? g.node('Reshape', [codes, g.int64s('latent_shape', [linOut / F, F])]) : codes;
  const latent = (k: number) =>
    spec.differentW
      ? g.node('Slice', [
          latentRows,
          g.int64s(`latent_start_${k}`, [k]),
          g.int64s(`latent_end_${k}`, [k + 1]),
          g.int64s(`latent_axes_${k}`, [0]),
        ])
      : latentRows;

  // U-Net decoder → SFT conditions.
  const conditions: Array<{ scale: string; shift: string }> = [];
  for (let i = 0; i < spec.levels; i++) {
    feat = resBlock(g.node('Add', [feat, skips[i]!]), `conv_body_up.${i}`, 2);
    const cond = (name: string) => conv(lrelu(conv(feat, `${name}.${i}.0`)), `${name}.${i}.2`);
    conditions.push({ scale: cond('condition_scale'), shift: cond('condition_shift') });
  }

  // StyleGAN2 decoder. s = modulation(latent) scales the input channels; d demodulates each output channel.
  const modulated = (
    x: string,
    prefix: string,
    style: string,
    opts: { demodulate: boolean; upsample: boolean; gain: number },
  ) => {
    const mod = t(`${prefix}.modulation.weight`);
    const [cin, feats] = mod.shape as [number, number];
    const s = g.node('Add', [
      g.node('MatMul', [
        style,
        g.weight(`${prefix}.modulation.weight_t`, [feats, cin], transpose(mod.data, cin, feats)),
      ]),
      b(`${prefix}.modulation.bias`),
    ]);
    let input = opts.upsample ? resize(x, 2) : x;
    input = g.node('Mul', [input, g.node('Reshape', [s, g.int64s(`${prefix}.s_shape`, [1, cin, 1, 1])])]);
    const weight = convWeight(t(`${prefix}.weight`));
    const [cout, , k] = weight.dims as [number, number, number];
    const p = (k - 1) / 2;
    let out = g.conv(input, g.weight(`${prefix}.weight`, weight.dims, weight.data), null, [k, k], [p, p, p, p]);
    if (opts.demodulate) {
      // Σ_k W[o,i,k]², transposed to [in, out], pre-divided by gain² so d·gain comes out of one rsqrt.
      const sq = new Float32Array(cin * cout);
      const per = k * k;
      for (let o = 0; o < cout; o++)
        for (let i = 0; i < cin; i++) {
          let acc = 0;
          for (let j = 0; j < per; j++) acc += weight.data[(o * cin + i) * per + j]! ** 2;
          sq[i * cout + o] = acc / opts.gain ** 2;
        }
      const energy = g.node('MatMul', [g.node('Mul', [s, s]), g.weight(`${prefix}.weight_sq`, [cin, cout], sq)]);
      const eps = g.weight(`${prefix}.eps`, [1], new Float32Array([1e-8 / opts.gain ** 2]));
      const d = g.node('Reciprocal', [g.node('Sqrt', [g.node('Add', [energy, eps])])]);
      out = g.node('Mul', [out, g.node('Reshape', [d, g.int64s(`${prefix}.d_shape`, [1, cout, 1, 1])])]);
    }
    return out;
  };
  let noiseIndex = 0;
  const styleConv = (x: string, prefix: string, style: string, upsample: boolean) => {
    const out = modulated(x, `${prefix}.modulated_conv`, style, { demodulate: true, upsample, gain: Math.SQRT2 });
    // Noise injection with the stored buffer: out + strength · noise, then the bias and leaky ReLU.
    const noise = t(`stylegan_decoder.noises.noise${noiseIndex++}`);
    const strength = t(`${prefix}.weight`).data[0]!;
    const scaled = g.weight(
      `${prefix}.noise_scaled`,
      noise.shape,
      noise.data.map((v) => v * strength),
    );
    return lrelu(
      g.node('Add', [
        g.node('Add', [out, scaled]),
        g.weight(`${prefix}.bias`, t(`${prefix}.bias`).shape, t(`${prefix}.bias`).data),
      ]),
    );
  };
  const toRgb = (x: string, prefix: string, style: string, skip: string | null) => {
    const out = g.node('Add', [
      modulated(x, `${prefix}.modulated_conv`, style, { demodulate: false, upsample: false, gain: 1 }),
      g.weight(`${prefix}.bias`, t(`${prefix}.bias`).shape, t(`${prefix}.bias`).data),
    ]);
    return skip ? g.node('Add', [out, resize(skip, 2)]) : out;
  };

  const c4 = t('stylegan_decoder.constant_input.weight');
  let out = styleConv(
    g.weight('stylegan_decoder.constant_input.weight', c4.shape, c4.data),
    'stylegan_decoder.style_conv1',
    latent(0),
    false,
  );
  let skip = toRgb(out, 'stylegan_decoder.to_rgb1', latent(1), null);
  for (let level = 0, i = 1; level < spec.levels; level++, i += 2) {
    out = styleConv(out, `stylegan_decoder.style_convs.${2 * level}`, latent(i), true);
    const { scale, shift } = conditions[level]!;
    const channels = convWeight(t(`stylegan_decoder.style_convs.${2 * level}.modulated_conv.weight`)).dims[0]!;
    if (spec.sftHalf) {
      const half = Math.floor(channels / 2);
      const slice = (from: number, to: number, name: string) =>
        g.node('Slice', [
          out,
          g.int64s(`${name}_start`, [from]),
          g.int64s(`${name}_end`, [to]),
          g.int64s(`${name}_axes`, [1]),
        ]);
      const same = slice(0, half, `sft${level}_same`);
      const sft = slice(half, channels, `sft${level}_rest`);
      out = g.node('Concat', [same, g.node('Add', [g.node('Mul', [sft, scale]), shift])], { axis: attr.int(1) });
    } else {
      out = g.node('Add', [g.node('Mul', [out, scale]), shift]);
    }
    out = styleConv(out, `stylegan_decoder.style_convs.${2 * level + 1}`, latent(i + 1), false);
    skip = toRgb(out, `stylegan_decoder.to_rgbs.${level}`, latent(i + 2), skip);
  }
  g.node('Identity', [skip], {}, 'output');
  return {
    onnx: g.toBytes({
      producer: 'crisp-convert (GFPGANv1Clean)',
      doc: `GFPGANv1Clean ${spec.outSize}² face restorer, converted by Crisp`,
    }),
    spec,
  };
}
