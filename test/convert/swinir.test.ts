/**
 * SwinIR .pth / .safetensors → ONNX in TypeScript, against PyTorch: support/swinir_reference.py (written from
 * the paper and the public architecture, same keys as the released checkpoints) saves random-weight models of
 * each variant and its outputs on crops of real photos; the converted graphs must reproduce them at
 * max abs diff ≤ 1e-4 (fp32, 0–1 pixels), including sizes that are not a multiple of the window.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tilingFromDoc } from '../../engine/convert/architectures/registry.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { runCli } from '../helpers/runCli.js';
import { maxAbsDiff, runOnnx } from './support/onnxRun.js';
import { writeSafetensors } from './support/torchWriters.js';
import { expectMatchesPyTorch, referenceRun, type RefCase } from './support/transformerReference.js';

interface SwinirCase extends RefCase {
  expected: Record<string, unknown>;
}

const small = { embed_dim: 16, depths: [2, 2], num_heads: [2, 4], mlp_ratio: 2, num_feat: 8 };
/** 37×29 and 30×26 are not multiples of any window used here; 24×32 is one of 8. */
const odd = { name: 'odd', image: 'set14/baboon.png', width: 37, height: 29, left: 200, top: 180 };
const even = { name: 'even', image: 'set5/butterfly.png', width: 32, height: 24, left: 100, top: 60 };

const CASES: SwinirCase[] = [
  {
    id: 'classical-x2',
    seed: 1,
    config: { ...small, img_size: 32, in_chans: 3, window_size: 8, upscale: 2, upsampler: 'pixelshuffle' },
    // 6×5: smaller than one window; PyTorch still reflects 2 and 3 pixels.
    inputs: [odd, even, { ...odd, name: 'tiny', width: 6, height: 5 }],
    expected: { upsampler: 'pixelshuffle', scale: 2, windowSize: 8, depths: [2, 2], numHeads: [2, 4] },
  },
  {
    id: 'classical-x4-3conv',
    seed: 2,
    config: {
      ...small,
      depths: [3],
      num_heads: [4],
      img_size: 16,
      window_size: 4,
      upscale: 4,
      upsampler: 'pixelshuffle',
      resi_connection: '3conv',
    },
    inputs: [{ ...odd, width: 30, height: 26 }],
    expected: { upsampler: 'pixelshuffle', scale: 4, windowSize: 4, depths: [3], resiConnection: '3conv' },
  },
  {
    id: 'classical-x3',
    seed: 3,
    config: { ...small, img_size: 32, window_size: 8, upscale: 3, upsampler: 'pixelshuffle' },
    inputs: [even],
    expected: { upsampler: 'pixelshuffle', scale: 3 },
  },
  {
    id: 'lightweight-x2-rgba',
    seed: 4,
    config: { ...small, in_chans: 4, img_size: 32, window_size: 8, upscale: 2, upsampler: 'pixelshuffledirect' },
    inputs: [odd],
    expected: { upsampler: 'pixelshuffledirect', scale: 2, inChannels: 4, outChannels: 4, mlpRatio: 2 },
  },
  {
    id: 'realworld-x4',
    seed: 5,
    wrapper: 'params_ema',
    config: { ...small, img_size: 32, window_size: 8, upscale: 4, upsampler: 'nearest+conv' },
    inputs: [odd],
    expected: { upsampler: 'nearest+conv', scale: 4 },
  },
  {
    // The 1× JPEG artifact-reduction models: greyscale, window 7, img_range 255, residual on the input.
    id: 'jpeg-x1-grey',
    seed: 6,
    config: { ...small, in_chans: 1, img_size: 28, window_size: 7, upscale: 1, upsampler: '', img_range: 255 },
    inputs: [odd, even],
    expected: { upsampler: 'none', scale: 1, inChannels: 1, windowSize: 7, imgRange: 255 },
  },
];

const run = referenceRun(
  'swinir_reference.py',
  'crisp-swinir-',
  CASES,
  (c) => (c.config.in_chans as number | undefined) ?? 3,
  (c) => c.config.upscale as number,
  120_000,
);

describe('SwinIR conversion against PyTorch', () => {
  it.each(CASES)(
    '$id: .pth and .safetensors convert to the same graph, equal to PyTorch',
    async (c) => {
      const fromPth = await expectMatchesPyTorch(c.id, run.refs.get(c.id)!, {
        spec: { kind: 'swinir', embedDim: 16, ...c.expected },
        scale: c.config.upscale as number,
        peak: 0.1,
      });
      // The tile planner reads the window and cost back from the graph's doc string.
      const ws = (c.expected.windowSize as number | undefined) ?? 8;
      expect(tilingFromDoc(readOnnx(fromPth.onnx).doc)).toMatchObject({ window: ws, minSide: ws });
    },
    60_000,
  );

  it('a grey model imported for the RGB pipeline takes the luma and answers grey in R, G and B', async () => {
    const ref = run.refs.get('jpeg-x1-grey')!;
    const { onnx } = await convertBytes(readFileSync(ref.pth), 'pth', { rgbPorts: true });
    const inp = ref.inputs.get('odd')!;
    // A grey picture (R = G = B = the reference's grey input): its luma is exactly that grey.
    const rgb = new Float32Array(3 * inp.data.length);
    for (let c = 0; c < 3; c++) rgb.set(inp.data, c * inp.data.length);
    const y = await runOnnx(onnx, rgb, [1, 3, inp.dims[2]!, inp.dims[3]!]);
    expect(y.dims).toEqual([1, 3, inp.dims[2], inp.dims[3]]);
    for (let c = 0; c < 3; c++) {
      const plane = y.data.subarray(c * inp.expected.length, (c + 1) * inp.expected.length);
      expect(maxAbsDiff(plane, inp.expected)).toBeLessThanOrEqual(1e-4);
    }
  });

  it('inputs a reflection cannot pad (a side of 1) still run: edge pixels repeat, as a constant image does', async () => {
    const ref = run.refs.get('classical-x2')!;
    const { onnx } = await convertBytes(readFileSync(ref.pth), 'pth');
    const pixel = [0.8, 0.3, 0.1];
    const one = await runOnnx(onnx, Float32Array.from(pixel), [1, 3, 1, 1]);
    expect(one.dims).toEqual([1, 3, 2, 2]);
    // 1×1 pads to an 8×8 image of that pixel: the same output as the constant 8×8 image, cropped.
    const flat = await runOnnx(
      onnx,
      Float32Array.from({ length: 3 * 64 }, (_, i) => pixel[Math.floor(i / 64)]!),
      [1, 3, 8, 8],
    );
    const crop = Float32Array.from({ length: 12 }, (_, i) => {
      const [c, y, x] = [Math.floor(i / 4), Math.floor((i % 4) / 2), i % 2];
      return flat.data[(c * 16 + y) * 16 + x]!;
    });
    expect(maxAbsDiff(one.data, crop)).toBeLessThanOrEqual(1e-5);
    const row = await runOnnx(
      onnx,
      Float32Array.from({ length: 27 }, (_, i) => (i % 9) / 9),
      [1, 3, 1, 9],
    );
    expect(row.dims).toEqual([1, 3, 2, 18]);
    expect(row.data.every(Number.isFinite)).toBe(true);
  });

  it('crisp models import prints the detected SwinIR parameters and installs a model equal to PyTorch', async () => {
    const ref = run.refs.get('realworld-x4')!;
    const models = path.join(run.dir, 'models');
    const r = await runCli(['models', 'import', ref.safetensors, '--name', 'swinir-rw', '--dir', models]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const installed = path.join(models, 'custom', 'swinir-rw.onnx');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `${ref.safetensors}: imported as swinir-rw (x4, SwinIR real-world x4 (embed 16, depths 2/2, heads 2/4, window 8, mlp 2, 1conv)) → ${installed}`,
    );
    // The summary line: architecture, scale, parameters of the checkpoint, size of the converted graph, licence.
    expect(lines[1]).toMatch(/^ {2}SwinIR ×4, [\d.]+ k parameters, [\d.]+ MB, licence /);
    const inp = ref.inputs.get('odd')!;
    const y = await runOnnx(installed, inp.data, inp.dims);
    expect(maxAbsDiff(y.data, inp.expected)).toBeLessThanOrEqual(1e-4);
  }, 120_000);
});

describe('SwinIR-like checkpoints that cannot be converted are named', () => {
  const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
  const block = 'layers.0.residual_group.blocks.0';
  const swinKeys = (): Array<[string, { shape: number[]; data: Float32Array }]> => [
    ['conv_first.weight', t([16, 3, 3, 3])],
    [`${block}.norm1.weight`, t([16])],
    [`${block}.attn.relative_position_bias_table`, t([225, 2])],
    [`${block}.attn.relative_position_index`, t([64, 64])],
    [`${block}.attn.qkv.weight`, t([48, 16])],
    [`${block}.mlp.fc1.weight`, t([32, 16])],
  ];

  it('Swin2SR (cosine attention, logit scale) is refused by name', async () => {
    const dict = new Map([
      ...swinKeys(),
      ['patch_embed.proj.weight', t([16, 16, 1, 1])],
      [`${block}.attn.logit_scale`, t([2, 1, 1])],
    ]);
    await expect(convertBytes(writeSafetensors(dict), 'safetensors')).rejects.toThrow(
      /^this is a Swin2SR checkpoint \(a Swin V2 transformer\); Swin2SR is not supported$/,
    );
  });

  it('SwinIR with a leading pixel-unshuffle (conv_first.1) is refused by name', async () => {
    const dict = new Map(swinKeys().map(([k, v]) => [k === 'conv_first.weight' ? 'conv_first.1.weight' : k, v]));
    await expect(convertBytes(writeSafetensors(dict), 'safetensors')).rejects.toThrow(
      'this SwinIR checkpoint starts with a pixel-unshuffle (conv_first.1); that SwinIR variant is not supported',
    );
  });
});
