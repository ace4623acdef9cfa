/** The comparison's zoom arithmetic: a real 1:1 per device pixel, limits that reach both Fit and 1:1, panning bounds. */
import { describe, expect, it } from 'vitest';
import { bounded, FIT, oneToOneZoom, realPercent, zoomLimits, zoomTo } from '../../renderer/src/components/zoomMath.js';

describe('zoom arithmetic', () => {
  it('puts 1:1 at one image pixel per device pixel', () => {
    // 2000 px image in a 500 CSS px box: 4× the fitted view on a 1× screen, 2× on a 2× (Retina) screen.
    expect(oneToOneZoom(2000, 500, 1)).toBe(4);
    expect(oneToOneZoom(2000, 500, 2)).toBe(2);
    // A 144 px image shown fitted in a 480 px box is enlarged: 1:1 is below Fit.
    expect(oneToOneZoom(144, 480, 1)).toBeCloseTo(0.3);
    expect(realPercent(4, 4)).toBe(100);
    expect(realPercent(1, 4)).toBe(25);
    expect(oneToOneZoom(0, 500, 1)).toBe(1);
  });

  it('always lets the view reach both Fit and 1:1, and well past 1:1', () => {
    expect(zoomLimits(0.3)).toEqual({ min: 0.3, max: 16 });
    expect(zoomLimits(8)).toEqual({ min: 1, max: 32 });
    const limits = zoomLimits(0.3);
    expect(zoomTo(FIT, 0.01, 480, 480, limits).zoom).toBe(0.3);
    expect(zoomTo(FIT, 100, 480, 480, limits).zoom).toBe(16);
  });

  it('keeps a zoomed-in image covering the box and centres a smaller one', () => {
    expect(bounded({ zoom: 2, x: 50, y: -5000 }, 400, 300)).toEqual({ zoom: 2, x: 0, y: -300 });
    expect(bounded({ zoom: 0.5, x: -80, y: 3 }, 400, 300)).toEqual({ zoom: 0.5, x: 100, y: 75 });
    // Zooming at a point keeps that point still.
    const v = zoomTo(FIT, 2, 400, 300, zoomLimits(4), 100, 100);
    expect(v).toEqual({ zoom: 2, x: -100, y: -100 });
  });

  it('a zoomed view wider than the fitted image (a portrait result in a wide pane) pans within both', () => {
    // A 100 × 300 fitted image in a 400 × 300 view at 2×: 200 × 600, narrower than the view, taller than it.
    expect(bounded({ zoom: 2, x: -50, y: 40 }, 400, 300, 100, 300)).toEqual({ zoom: 2, x: 100, y: 0 });
    expect(bounded({ zoom: 2, x: 0, y: -9000 }, 400, 300, 100, 300)).toEqual({ zoom: 2, x: 100, y: -300 });
    // At 8×: 800 px wide, so it covers the view and pans to its edges.
    expect(bounded({ zoom: 8, x: 50, y: 0 }, 400, 300, 100, 300)).toEqual({ zoom: 8, x: 0, y: 0 });
    expect(bounded({ zoom: 8, x: -5000, y: 0 }, 400, 300, 100, 300)).toEqual({ zoom: 8, x: -400, y: 0 });
    // Zooming about the view's centre from Fit (the image centred at x = 150) keeps it centred.
    const v = zoomTo({ zoom: 1, x: 150, y: 0 }, 2, 400, 300, zoomLimits(4), 200, 150, 100, 300);
    expect(v).toEqual({ zoom: 2, x: 100, y: -150 });
  });
});
