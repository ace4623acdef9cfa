import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertModelFile } from '../../engine/convert/convert.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { imagePatch, maxAbsDiff, runOnnx } from './support/onnxRun.js';

describe('PyTorch checkpoint → ONNX (real weights)', () => {
  it('realesr-animevideov3.pth converts to a model matching the reference ONNX within 1e-4 on real images', async () => {
    const converted = await convertModelFile(path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'));
    expect(converted.spec).toEqual({
      kind: 'srvgg',
      inChannels: 3,
      outChannels: 3,
      numFeat: 64,
      numConv: 16,
      scale: 4,
      activation: 'prelu',
    });
    const info = readOnnx(converted.onnx);
    expect(info.opset).toBe(17);
    expect(info.inputs[0]).toEqual({ name: 'input', elemType: 1, shape: ['batch', 3, 'height', 'width'] });
    expect(info.outputs[0]?.name).toBe('output');
    expect(info.nodes.map((n) => n.opType).slice(-3)).toEqual(['DepthToSpace', 'Resize', 'Add']);
    const reference = new Uint8Array(await readFile(path.join(ONNX_DIR, 'realesr-animevideov3.onnx')));
    for (const [img, left, top] of [
      ['baby.png', 200, 200],
      ['butterfly.png', 64, 96],
    ] as const) {
      const x = await imagePatch(path.join(IMAGES_DIR, 'set5', img), 64, left, top);
      const [ours, ref] = await Promise.all([
        runOnnx(converted.onnx, x, [1, 3, 64, 64]),
        runOnnx(reference, x, [1, 3, 64, 64]),
      ]);
      expect(ours.dims).toEqual([1, 3, 256, 256]);
      expect(maxAbsDiff(ours.data, ref.data)).toBeLessThanOrEqual(1e-4);
    }
  });

  it('handles non-square, odd-sized and batched inputs (dynamic batch/height/width)', async () => {
    const converted = await convertModelFile(path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'));
    const x = new Float32Array(2 * 3 * 7 * 11).map((_, i) => (i % 13) / 13);
    const out = await runOnnx(converted.onnx, x, [2, 3, 7, 11]);
    expect(out.dims).toEqual([2, 3, 28, 44]);
  });
});
