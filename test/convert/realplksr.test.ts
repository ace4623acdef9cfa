/**
 * RealPLKSR checkpoints (PixelShuffle and DySample upsamplers, GroupNorm and LayerNorm variants) → ONNX, against
 * PyTorch (support/sr_reference.py, random weights, released key layout) on real photo patches.
 */
import { referenceSuite, type RefCase } from './support/srReference.js';

const base = { dim: 16, blocks: 2, kernel: 9, split: 0.25, ea: true, layerNorm: false, dysample: false };
const CASES: RefCase[] = [
  {
    name: 'x4-pixelshuffle',
    arch: 'realplksr',
    seed: 21,
    wrapper: 'params_ema',
    options: { ...base, scale: 4 },
    inputs: [
      { image: 'set14/baboon.png', left: 10, top: 20, w: 32, h: 32, c: 3 },
      { image: 'set14/comic.png', left: 30, top: 40, w: 27, h: 35, c: 3 },
    ],
    expected: { kind: 'realplksr', scale: 4, dim: 16, numBlocks: 2, kernelSize: 9, partialDim: 4, dysample: false },
  },
  {
    name: 'x2-dysample-layernorm',
    arch: 'realplksr',
    seed: 22,
    wrapper: 'params',
    options: { ...base, scale: 2, dysample: true, layerNorm: true, kernel: 7 },
    inputs: [{ image: 'set5/butterfly.png', left: 50, top: 60, w: 39, h: 31, c: 3 }],
    expected: { kind: 'realplksr', scale: 2, dysample: true, layerNorm: true, kernelSize: 7 },
  },
  {
    name: 'x3-dysample-no-ea',
    arch: 'realplksr',
    seed: 23,
    wrapper: null,
    options: { ...base, scale: 3, dysample: true, ea: false, blocks: 3 },
    inputs: [{ image: 'set14/lenna.png', left: 250, top: 250, w: 30, h: 25, c: 3 }],
    expected: { kind: 'realplksr', scale: 3, dysample: true, useEa: false, numBlocks: 3 },
  },
  {
    name: 'x1-pixelshuffle',
    arch: 'realplksr',
    seed: 24,
    wrapper: 'model',
    options: { ...base, scale: 1, split: 0.5 },
    inputs: [{ image: 'set14/foreman.png', left: 40, top: 40, w: 45, h: 33, c: 3 }],
    expected: { kind: 'realplksr', scale: 1, partialDim: 8, dysample: false },
  },
  {
    name: 'x1-dysample',
    arch: 'realplksr',
    seed: 25,
    wrapper: 'params_ema',
    options: { ...base, scale: 1, dysample: true },
    inputs: [{ image: 'set5/head.png', left: 100, top: 100, w: 30, h: 30, c: 3 }],
    expected: { kind: 'realplksr', scale: 1, dysample: true },
  },
];

referenceSuite('RealPLKSR', 'crisp-realplksr-', CASES);
