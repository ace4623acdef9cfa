import { describe, expect, it } from 'vitest';
import { convertBytes } from '../../engine/convert/convert.js';
import { maxAbsDiff, runOnnx } from './support/onnxRun.js';
import { randomRrdb, rng, rrdbForward, type RrdbCase } from './support/reference.js';
import { writePthLegacy, writePthZip, writeSafetensors } from './support/torchWriters.js';

type Container = 'safetensors' | 'pth' | 'legacy';
const CASES: Array<RrdbCase & { container: Container }> = [
  { layout: 'basicsr', numBlocks: 6, scale: 4, numFeat: 12, numGrowCh: 8, container: 'safetensors' },
  { layout: 'basicsr', numBlocks: 6, scale: 2, numFeat: 8, numGrowCh: 8, container: 'pth' },
  { layout: 'basicsr', numBlocks: 23, scale: 4, numFeat: 8, numGrowCh: 8, container: 'pth' },
  { layout: 'basicsr', numBlocks: 23, scale: 2, numFeat: 16, numGrowCh: 8, container: 'safetensors' },
  { layout: 'basicsr', numBlocks: 6, scale: 1, numFeat: 8, numGrowCh: 8, container: 'safetensors' },
  { layout: 'esrgan', numBlocks: 6, scale: 4, numFeat: 16, numGrowCh: 8, container: 'pth' },
  { layout: 'esrgan', numBlocks: 6, scale: 2, numFeat: 8, numGrowCh: 8, container: 'safetensors' },
  { layout: 'esrgan', numBlocks: 23, scale: 4, numFeat: 8, numGrowCh: 8, container: 'safetensors' },
  { layout: 'esrgan', numBlocks: 23, scale: 2, numFeat: 12, numGrowCh: 8, container: 'legacy' },
  { layout: 'esrgan', numBlocks: 6, scale: 8, numFeat: 8, numGrowCh: 8, container: 'pth' },
];

describe('RRDBNet (generated weights) → ONNX agrees with an independent TypeScript forward pass', () => {
  it.each(CASES)('$layout keys, $numBlocks blocks, x$scale, nf $numFeat, as $container', async (c) => {
    const { dict, basicsr, unshuffle, numUpsample } = randomRrdb(c, c.numBlocks * 10 + c.scale);
    const bytes =
      c.container === 'safetensors'
        ? writeSafetensors(dict)
        : c.container === 'pth'
          ? writePthZip(dict)
          : writePthLegacy(dict);
    const converted = await convertBytes(bytes, c.container === 'safetensors' ? 'safetensors' : 'pth');
    expect(converted.spec).toMatchObject({
      kind: 'rrdb',
      layout: c.layout,
      numBlocks: c.numBlocks,
      numFeat: c.numFeat,
      numGrowCh: c.numGrowCh,
      scale: c.scale,
      unshuffle,
    });
    const size = 8;
    const rand = rng(7);
    const x = Float32Array.from({ length: 3 * size * size }, () => rand());
    const ours = await runOnnx(converted.onnx, x, [1, 3, size, size]);
    const ref = rrdbForward(
      basicsr,
      { c: 3, h: size, w: size, data: x },
      { scale: c.scale, numBlocks: c.numBlocks, numUpsample, unshuffle },
    );
    expect(ours.dims).toEqual([1, 3, size * c.scale, size * c.scale]);
    expect([ref.c, ref.h, ref.w]).toEqual([3, size * c.scale, size * c.scale]);
    // The output must not be trivially small, or the comparison would prove nothing.
    expect(Math.max(...ref.data.map(Math.abs))).toBeGreaterThan(1e-3);
    expect(maxAbsDiff(ours.data, ref.data)).toBeLessThanOrEqual(1e-4);
  });
});
