/**
 * OmniSR checkpoints → ONNX, against PyTorch (support/sr_reference.py, random weights, released key layout) on
 * real photo patches, including sizes that are not a multiple of the window (padded in the graph, cropped back).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { tilingFromDoc } from '../../engine/convert/architectures/registry.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { runOnnx } from './support/onnxRun.js';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { makeEngine, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { photoPatch, referenceSuite, type RefCase } from './support/srReference.js';

const base = { in: 3, out: 3, feat: 16, blocks: 1, groups: 1, window: 8, pe: true, bias: true };
const CASES: RefCase[] = [
  {
    name: 'x4-window8',
    arch: 'omnisr',
    seed: 31,
    wrapper: 'params_ema',
    options: { ...base, scale: 4 },
    inputs: [
      { image: 'set14/baboon.png', left: 100, top: 100, w: 32, h: 32, c: 3 },
      { image: 'set14/lenna.png', left: 220, top: 230, w: 45, h: 37, c: 3 },
    ],
    expected: { kind: 'omnisr', scale: 4, numFeat: 16, blockNum: 1, resNum: 1, windowSize: 8, pe: true, bias: true },
  },
  {
    name: 'x2-two-groups-thop',
    arch: 'omnisr',
    seed: 32,
    wrapper: 'params',
    options: { ...base, scale: 2, groups: 2, blocks: 2, thop: true },
    inputs: [{ image: 'set5/butterfly.png', left: 70, top: 80, w: 35, h: 41, c: 3 }],
    expected: { kind: 'omnisr', scale: 2, blockNum: 2, resNum: 2 },
  },
  {
    // Without the position-bias table the window cannot be read from the weights; OmniSR's default 8 is assumed.
    name: 'x1-no-pe',
    arch: 'omnisr',
    seed: 33,
    wrapper: null,
    options: { ...base, scale: 1, pe: false },
    inputs: [{ image: 'set14/comic.png', left: 20, top: 30, w: 30, h: 19, c: 3 }],
    expected: { kind: 'omnisr', scale: 1, pe: false, windowSize: 8 },
  },
  {
    name: 'x3-rgba-window4',
    arch: 'omnisr',
    seed: 34,
    wrapper: 'state_dict',
    options: { ...base, in: 4, out: 4, scale: 3, window: 4 },
    inputs: [{ image: 'set14/barbara.png', left: 200, top: 300, w: 26, h: 22, c: 4 }],
    expected: { kind: 'omnisr', scale: 3, windowSize: 4, inChannels: 4, outChannels: 4 },
  },
];

const suite = referenceSuite('OmniSR', 'crisp-omnisr-', CASES);

describe('OmniSR on small inputs', () => {
  it('pads inputs under 16 pixels (where the reference fails in ESA) and crops back', async () => {
    const converted = await convertBytes(readFileSync(suite.refs.get('x4-window8')!.pth), 'pth');
    const p = await photoPatch({ image: 'set14/baboon.png', left: 5, top: 9, w: 12, h: 10, c: 3 });
    const out = await runOnnx(converted.onnx, p.data, [1, 3, 10, 12]);
    expect(out.dims).toEqual([1, 3, 40, 48]);
    expect(out.data.every(Number.isFinite)).toBe(true);
  });
});

describe('OmniSR tiling', () => {
  it('an imported OmniSR records its window, and the engine upscales with tiles grown to it', async () => {
    const models = path.join(suite.root, 'models');
    const m = await importCustomModel(suite.refs.get('x4-window8')!.pth, { modelsDir: models, name: 'omni' });
    expect(m).toMatchObject({ architecture: 'OmniSR', scale: 4, window: 8 });
    const photo = path.join(suite.root, 'crop.png');
    await sharp(path.join(IMAGES_DIR, 'set14/lenna.png'))
      .extract({ left: 200, top: 200, width: 70, height: 53 })
      .toFile(photo);
    // 20-pixel tiles: every padded tile is grown from 20 + overlap to a multiple of 8 inside the image.
    const engine = await makeEngine({ customModelsDir: models, tileSize: 20 });
    try {
      const out = path.join(suite.root, 'omni-out.png');
      const { taskId } = await engine.startTask(LOCAL_CALLER, {
        fields: { model: 'custom:omni', scale: 4, saveImageAs: 'png', enhanceFace: false },
        file: [{ originalFileName: 'crop.png', data: { path: photo } }],
        outputPath: out,
      });
      const s = await waitForTask(engine, taskId, LOCAL_CALLER, undefined, 120_000);
      expect(s.status, s.error).toBe('PROCESSED');
      const meta = await sharp(out).metadata();
      expect([meta.width, meta.height]).toEqual([280, 212]);
    } finally {
      await engine.close();
    }
  }, 180_000);

  it('the converted graph tells the tile planner its window', async () => {
    const converted = await convertBytes(readFileSync(suite.refs.get('x3-rgba-window4')!.safetensors), 'safetensors');
    expect(tilingFromDoc(readOnnx(converted.onnx).doc)).toEqual({ window: 4, minSide: 16, relativeCost: 2.3 });
  });
});
