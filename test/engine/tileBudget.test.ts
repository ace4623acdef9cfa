/** The GPU tile policy per provider and precision (tiles.ts), from the H100 WebGPU measurements of issue 37. */
import { describe, expect, it } from 'vitest';
import type { ExecutionProvider, Precision } from '../../engine/core/inference/index.js';
import { chooseTileSize, planTiles, tileBudget } from '../../engine/core/pipeline/tiles.js';

const largest = (w: number, h: number, ep: ExecutionProvider, precision: Precision) =>
  Math.max(...planTiles(w, h, chooseTileSize(w, h, ep, precision)).tiles.map((t) => t.w * t.h));

describe('tile budget per provider and precision', () => {
  it('the CPU bounds memory at 512² whatever the precision; fp32 on a GPU stays below its cliff, fp16 goes to 1000² (1 MP)', () => {
    for (const p of ['fp32', 'int8', 'fp16'] as const) expect(tileBudget('cpu', p)).toBe(512 * 512);
    for (const ep of ['webgpu', 'cuda', 'dml', 'coreml'] as const) {
      expect(tileBudget(ep, 'fp32')).toBe(768 * 768);
      expect(tileBudget(ep)).toBe(768 * 768);
      expect(tileBudget(ep, 'fp16')).toBe(1000 * 1000);
    }
    // fp32's cliff was measured at ~0.9 MP (1024² and 720×1280 both 2.7× slower per pixel): its budget is below it.
    expect(tileBudget('webgpu', 'fp32')).toBeLessThan(720 * 1280);
    // fp16's covers a whole 720×1280 frame (measured without a cliff), and a square tile's side stays below 1024.
    expect(tileBudget('webgpu', 'fp16')).toBeGreaterThanOrEqual(720 * 1280);
    expect(chooseTileSize(4000, 4000, 'webgpu', 'fp16')).toBeLessThan(1024);
  });

  it('a 720×1280 frame: one tile in fp16 on WebGPU (no cliff there), two in fp32, four on the CPU', () => {
    expect(planTiles(1280, 720, chooseTileSize(1280, 720, 'webgpu', 'fp16')).tiles).toHaveLength(1);
    expect(planTiles(1280, 720, chooseTileSize(1280, 720, 'webgpu', 'fp32')).tiles).toHaveLength(2);
    expect(planTiles(1280, 720, chooseTileSize(1280, 720, 'cpu', 'fp32')).tiles).toHaveLength(4);
  });

  it('a 4K input stays within each budget with no more tiles than square tiles of the budget would need', () => {
    for (const [ep, precision, budget] of [
      ['webgpu', 'fp16', 1000 * 1000],
      ['webgpu', 'fp32', 768 * 768],
      ['cpu', 'int8', 512 * 512],
    ] as const) {
      expect(largest(3840, 2160, ep, precision)).toBeLessThanOrEqual(budget);
      const n = planTiles(3840, 2160, chooseTileSize(3840, 2160, ep, precision)).tiles.length;
      const side = Math.sqrt(budget);
      expect(n).toBeLessThanOrEqual(Math.ceil(3840 / side) * Math.ceil(2160 / side));
    }
    // fp16's larger tiles cut a 4K input into fewer pieces than fp32's.
    const count = (p: 'fp16' | 'fp32') => planTiles(3840, 2160, chooseTileSize(3840, 2160, 'webgpu', p)).tiles.length;
    expect(count('fp16')).toBeLessThan(count('fp32'));
  });
});
