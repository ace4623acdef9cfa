/** Which waiting images the engine would refuse as too large, from their header sizes (issue 41 item 7). */
import { afterEach, describe, expect, it } from 'vitest';
import { countTooLarge } from '../../app/jobs/outputFits.js';

const saved = process.env.CRISP_MAX_OUTPUT_PIXELS;
afterEach(() => {
  if (saved === undefined) delete process.env.CRISP_MAX_OUTPUT_PIXELS;
  else process.env.CRISP_MAX_OUTPUT_PIXELS = saved;
});

describe('countTooLarge', () => {
  it("Local: the engine's pixel limit (CRISP_MAX_OUTPUT_PIXELS), scale, double upscale and exact size", async () => {
    process.env.CRISP_MAX_OUTPUT_PIXELS = '1000000';
    const photo = { width: 600, height: 400 };
    const job = { scale: 2 as const, saveImageAs: 'png' as const };
    // ×2: 1200×800 = 0.96 MP fits; ×4: 3.84 MP does not. An image whose size is unknown is not counted.
    expect(await countTooLarge('local', job, [photo, undefined])).toBe(0);
    expect(await countTooLarge('local', { ...job, scale: 4 }, [photo, { width: 100, height: 100 }])).toBe(1);
    // Twice ×2 is ×4 in all.
    expect(await countTooLarge('local', { ...job, passes: 2 }, [photo])).toBe(1);
    // An exact width of 1200 is 1200×800 (fits); 1500 is 1500×1000 (1.5 MP).
    expect(await countTooLarge('local', { ...job, size: { width: 1200 } }, [photo])).toBe(0);
    expect(await countTooLarge('local', { ...job, size: { width: 1500 } }, [photo])).toBe(1);
  });

  it("Cloud: only the contract's per-format side limits (a service's pixel limits are its own)", async () => {
    process.env.CRISP_MAX_OUTPUT_PIXELS = '1000000';
    const wide = { width: 2100, height: 4 };
    expect(await countTooLarge('cloud', { scale: 8, saveImageAs: 'png' }, [wide, { width: 600, height: 400 }])).toBe(0);
    // 16800 px a side: WebP holds at most 16383.
    expect(await countTooLarge('cloud', { scale: 8, saveImageAs: 'webp' }, [wide])).toBe(1);
  });
});
