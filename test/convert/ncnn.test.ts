import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertModelFile } from '../../engine/convert/convert.js';
import { convertNcnn, NcnnError, parseNcnnParam } from '../../engine/convert/ncnn.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { imagePatch, maxAbsDiff, runOnnx } from './support/onnxRun.js';

const NCNN_DIR = path.join(MODELS_DIR, 'ncnn');
const PAIRS: Array<[string, string]> = [
  ['RealESRGAN_General_x4_v3', 'realesr-general-x4v3'],
  ['RealESRGAN_General_WDN_x4_v3', 'realesr-general-wdn-x4v3'],
  ['realesr-animevideov3-x4', 'realesr-animevideov3'],
  ['4xLSDIRCompactC3', '4xLSDIRCompactC3'],
];

describe('ncnn .param/.bin → ONNX (real Upscayl models)', () => {
  it.each(PAIRS)('%s matches onnx/%s.onnx within 2/255 on a real image patch', async (ncnn, onnx) => {
    const converted = await convertModelFile(path.join(NCNN_DIR, `${ncnn}.param`));
    expect(converted.format).toBe('ncnn');
    const x = await imagePatch(path.join(IMAGES_DIR, 'set5', 'head.png'), 64, 100, 80);
    const [ours, ref] = await Promise.all([
      runOnnx(converted.onnx, x, [1, 3, 64, 64]),
      runOnnx(path.join(ONNX_DIR, `${onnx}.onnx`), x, [1, 3, 64, 64]),
    ]);
    expect(ours.dims).toEqual([1, 3, 256, 256]);
    expect(maxAbsDiff(ours.data, ref.data)).toBeLessThanOrEqual(2 / 255);
  });

  it('parses layer lines and array parameters', () => {
    const layers = parseNcnnParam(
      '7767517\n2 2\nInput in 0 1 data\nConvolution c 1 1 data out 0=8 1=3 4=1 5=1 6=216 -23310=2,1.0,2.5\n',
    );
    expect(layers[1]?.params.get(0)).toBe(8);
    expect(layers[1]?.params.get(10)).toEqual([1, 2.5]);
  });

  it('refuses a .bin that does not match its .param, and unknown layer types by name', async () => {
    const param = await readFile(path.join(NCNN_DIR, 'realesr-animevideov3-x4.param'), 'utf8');
    const bin = await readFile(path.join(NCNN_DIR, 'realesr-animevideov3-x4.bin'));
    expect(() => convertNcnn(param, bin.subarray(0, bin.length - 100))).toThrow(/does not match the \.param/);
    expect(() => convertNcnn(param.replace('PixelShuffle ', 'Deconvolution '), bin)).toThrow(NcnnError);
    expect(() => convertNcnn(param.replace('PixelShuffle ', 'Deconvolution '), bin)).toThrow(
      /unsupported ncnn layer type Deconvolution/,
    );
  });
});
