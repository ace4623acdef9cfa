import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import {
  InferenceProviderError,
  autoProviders,
  createInference,
  runModelBytes,
} from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { bareSession, releaseBareSessions } from '../bench/quality.js';
import { MODELS_DIR } from '../helpers/paths.js';
import * as ort from 'onnxruntime-node';

const lite = resolveModel('service-lite-4x', [MODELS_DIR]);
const anime = resolveModel('digital-art-4x', [MODELS_DIR]);

afterAll(releaseBareSessions);

function ramp(h: number, w: number): Float32Array {
  const x = new Float32Array(3 * h * w);
  for (let i = 0; i < x.length; i++) x[i] = ((i * 7919) % 1000) / 1000;
  return x;
}

describe('inference', () => {
  it('auto tries the GPU providers first and quietly falls back to cpu here', async () => {
    const order = autoProviders('linux', true);
    expect(order[0]).toBe('webgpu');
    expect(order.at(-1)).toBe('cpu');
    // Without a Vulkan loader WebGPU cannot work on Linux, so auto does not even try it.
    expect(autoProviders('linux', false)).not.toContain('webgpu');
    const logs: string[] = [];
    const inf = createInference({ executionProvider: 'auto', candidates: ['webgpu', 'cpu'], log: (m) => logs.push(m) });
    try {
      const s = await inf.session(lite);
      expect(s.provider).toBe('cpu');
      expect(s.scale).toBe(4);
      await inf.session(anime);
      // One notice for the failed provider, not one per model.
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatch(/'webgpu'.*unavailable.*adapter/i);
      expect(logs[0]).not.toMatch(/onnxruntime_src/);
    } finally {
      await inf.release();
    }
  });

  it('auto gives a small job the CPU without starting the GPU, and says why a big one fell back', async () => {
    const logs: string[] = [];
    const inf = createInference({
      executionProvider: 'auto',
      candidates: ['webgpu', 'cpu'],
      threads: 16,
      log: (m) => logs.push(m),
    });
    const bytes = readFileSync(lite.path).length;
    try {
      const small = inf.forJob({ inputPixels: 64 * 64, modelBytes: bytes });
      expect((await small.session(lite)).provider).toBe('cpu');
      expect(small.providerReason(lite)).toMatch(/^cpu: this job runs about .* so it finishes sooner on the CPU\.$/);
      // WebGPU was never tried: no fallback notice.
      expect(logs).toEqual([]);

      const big = inf.forJob({ inputPixels: 1920 * 1080, modelBytes: bytes });
      expect((await big.session(lite)).provider).toBe('cpu');
      expect(big.providerReason(lite)).toMatch(
        /^cpu: webgpu could not run the model \(.*adapter.*\), so auto fell back\.$/i,
      );
      expect(logs).toHaveLength(1);
      // Each view keeps its own job's reason.
      expect(small.providerReason(lite)).toMatch(/finishes sooner on the CPU/);
      expect(small.providerReason(anime)).toBeUndefined();
    } finally {
      await inf.release();
    }
    const explicit = createInference({ executionProvider: 'cpu' });
    const job = explicit.forJob({ inputPixels: 64 * 64, modelBytes: bytes });
    expect((await job.session(lite)).provider).toBe('cpu');
    expect(job.providerReason(lite)).toBe('cpu: the execution provider asked for.');
    await explicit.release();
  });

  it('an explicitly requested provider that cannot start is a clear error', async () => {
    const inf = createInference({ executionProvider: 'webgpu', log: () => undefined });
    await expect(inf.session(lite)).rejects.toThrow(InferenceProviderError);
    await expect(inf.session(lite)).rejects.toThrow(/'webgpu' execution provider could not run the model/);
    await inf.release();
  });

  it('reuses one session per model and gives the same numbers as a bare onnxruntime session', async () => {
    const inf = createInference({ executionProvider: 'cpu', threads: 2 });
    const a = await inf.session(lite);
    expect(await inf.session(lite)).toBe(a);
    const b = await inf.session(anime);
    expect(b).not.toBe(a);
    expect(a.provider).toBe('cpu');

    const [h, w] = [20, 28];
    const x = ramp(h, w);
    const out = await a.run(x, 1, h, w);
    expect(out.dims).toEqual([1, 3, h * 4, w * 4]);
    const bare = await bareSession(lite.path);
    const ref = (await bare.run({ input: new ort.Tensor('float32', x, [1, 3, h, w]) })).output!.data as Float32Array;
    let maxDiff = 0;
    for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ref[i]! - out.data[i]!));
    expect(maxDiff).toBeLessThan(1e-4);

    await inf.release();
    const c = await inf.session(lite);
    expect(c).not.toBe(a);
    expect((await c.run(x, 1, h, w)).dims).toEqual([1, 3, h * 4, w * 4]);
    await inf.release();
  });

  it('runs an in-memory model once (install smoke tests)', async () => {
    const x = ramp(8, 12);
    const out = await runModelBytes(readFileSync(anime.path), x, [1, 3, 8, 12]);
    expect(out.dims).toEqual([1, 3, 32, 48]);
    expect(out.data.every((v) => Number.isFinite(v))).toBe(true);
    await expect(runModelBytes(new Uint8Array([1, 2, 3]), x, [1, 3, 8, 12])).rejects.toThrow();
  });
});
