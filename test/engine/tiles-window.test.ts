/** The tile planner's window alignment (for window-attention models) and the per-architecture tiling table. */
import { describe, expect, it } from 'vitest';
import type { OmniSrSpec } from '../../engine/convert/architectures/omnisr.js';
import { tilingFromDoc, tilingOf } from '../../engine/convert/architectures/registry.js';
import { planTiles } from '../../engine/core/pipeline/tiles.js';

function coverage(plan: ReturnType<typeof planTiles>): Uint8Array {
  const seen = new Uint8Array(plan.width * plan.height);
  for (const t of plan.tiles)
    for (let y = t.y; y < t.y + t.h; y++) for (let x = t.x; x < t.x + t.w; x++) seen[y * plan.width + x]!++;
  return seen;
}

describe('planTiles with a window', () => {
  it.each([
    [1000, 700, 512, 8],
    [1203, 517, 256, 16],
    [70, 45, 512, 8],
    [37, 5, 512, 8],
  ])('%i×%i, tiles of %i, window %i', (w, h, size, win) => {
    const plain = planTiles(w, h, size);
    const plan = planTiles(w, h, size, 16, win);
    // Same cores: every output pixel still comes from exactly one tile.
    expect(plan.tiles.map(({ x, y, w, h }) => [x, y, w, h])).toEqual(plain.tiles.map(({ x, y, w, h }) => [x, y, w, h]));
    expect(coverage(plan).every((v) => v === 1)).toBe(true);
    for (const [i, t] of plan.tiles.entries()) {
      const p = plain.tiles[i]!;
      // Grown, never shrunk, and inside the image.
      expect(t.px).toBeLessThanOrEqual(p.px);
      expect(t.py).toBeLessThanOrEqual(p.py);
      expect(t.px + t.pw).toBeGreaterThanOrEqual(p.px + p.pw);
      expect(t.py + t.ph).toBeGreaterThanOrEqual(p.py + p.ph);
      expect(t.px).toBeGreaterThanOrEqual(0);
      expect(t.px + t.pw).toBeLessThanOrEqual(w);
      expect(t.py + t.ph).toBeLessThanOrEqual(h);
      // A multiple of the window wherever the image is large enough, else the whole image side.
      expect(t.pw % win === 0 || t.pw === w).toBe(true);
      expect(t.ph % win === 0 || t.ph === h).toBe(true);
    }
  });

  it('window 1 is the plain plan', () => {
    expect(planTiles(999, 333, 200, 16, 1)).toEqual(planTiles(999, 333, 200));
  });
});

describe('tiling per architecture', () => {
  const omni: OmniSrSpec = {
    kind: 'omnisr',
    inChannels: 3,
    outChannels: 3,
    numFeat: 64,
    blockNum: 1,
    resNum: 5,
    windowSize: 8,
    pe: true,
    bias: true,
    scale: 4,
  };
  it('reads the window from the spec a converted model carries', () => {
    expect(tilingOf(omni)).toMatchObject({ window: 8, minSide: 16 });
    expect(tilingFromDoc(JSON.stringify({ ...omni, windowSize: 16 }))).toMatchObject({ window: 16 });
    expect(tilingFromDoc('ONNX model from elsewhere')).toBeNull();
    expect(tilingFromDoc('{"kind":"unknown"}')).toBeNull();
  });
});
