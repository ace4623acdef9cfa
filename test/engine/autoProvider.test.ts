import { describe, expect, it } from 'vitest';
import {
  AUTO_PROVIDER_MEASURED,
  chooseAutoProvider,
  cpuSecondsPerInputMp,
  GPU_SECONDS_PER_INPUT_MP,
  type AutoProviderInput,
} from '../../engine/core/inference/index.js';

const GENERAL_X4V3 = AUTO_PROVIDER_MEASURED.referenceModelBytes;
const px = (w: number, h: number) => ({ inputPixels: w * h, modelBytes: GENERAL_X4V3 });
const cold = (over: Partial<AutoProviderInput>): AutoProviderInput => ({
  candidates: ['webgpu', 'cpu'],
  warm: new Set(),
  work: px(256, 256),
  cpuThreads: 16,
  forgoneSeconds: 0,
  ...over,
});

describe("auto's provider for one job", () => {
  it('reproduces the measurements it rests on', () => {
    // 960×540 on the reference model: 1.68 s on 16 threads, 6.7 s on 2, 0.178 s on the H100's WebGPU.
    expect(cpuSecondsPerInputMp(16) * 0.5184).toBeCloseTo(1.68, 2);
    expect(cpuSecondsPerInputMp(2) * 0.5184).toBeCloseTo(6.7, 2);
    expect(GPU_SECONDS_PER_INPUT_MP * 0.5184).toBeCloseTo(0.178, 3);
    expect(cpuSecondsPerInputMp(8)).toBeGreaterThan(cpuSecondsPerInputMp(16));
  });

  it('a 256² input on a cold GPU runs on the CPU (the H100 case: 1.31 s CPU against 1.94 s WebGPU)', () => {
    const c = chooseAutoProvider(cold({}));
    expect(c.provider).toBe('cpu');
    expect(c.reason).toMatch(
      /^cpu: this job runs about 0\.21 s on the CPU \(16 threads\) against 0\.02 s on webgpu plus its ~1\.40 s start-up, so it finishes sooner on the CPU\.$/,
    );
    expect(c.forgone).toBeCloseTo(0.19, 2);
  });

  it('a 960×540 input starts the GPU: it saves more than the start-up', () => {
    const c = chooseAutoProvider(cold({ work: px(960, 540) }));
    expect(c.provider).toBe('webgpu');
    expect(c.reason).toMatch(/^webgpu: this job runs about 1\.68 s on the CPU .* so starting webgpu pays\.$/);
    expect(c.forgone).toBeUndefined();
  });

  it('the break-even follows the CPU: fewer threads hand smaller jobs to the GPU', () => {
    // 400×400 = 0.16 MP: 0.52 s saved on 16 threads (< 1.4 s), 2.0 s on 2 threads (> 1.4 s).
    expect(chooseAutoProvider(cold({ work: px(400, 400), cpuThreads: 16 })).provider).toBe('cpu');
    expect(chooseAutoProvider(cold({ work: px(400, 400), cpuThreads: 2 })).provider).toBe('webgpu');
  });

  it('a heavier model (more weights per pixel) reaches the GPU at fewer pixels', () => {
    const small = { inputPixels: 256 * 256, modelBytes: GENERAL_X4V3 * 16 };
    expect(chooseAutoProvider(cold({ work: small })).provider).toBe('webgpu');
  });

  it('once the GPU session is warm, small jobs use it', () => {
    const c = chooseAutoProvider(cold({ warm: new Set(['webgpu']) }));
    expect(c).toEqual({
      provider: 'webgpu',
      reason: "webgpu: auto's first choice here, its session for this model already warm.",
    });
  });

  it('small jobs add up: the job whose saving with the earlier ones covers the start-up starts the GPU', () => {
    let forgoneSeconds = 0;
    const picks: string[] = [];
    for (let i = 0; i < 9; i++) {
      const c = chooseAutoProvider(cold({ forgoneSeconds }));
      picks.push(c.provider);
      forgoneSeconds += c.forgone ?? 0;
    }
    // Each 256² job would save 0.19 s: seven of them (1.33 s) do not cover 1.4 s, the eighth does.
    expect(picks).toEqual(['cpu', 'cpu', 'cpu', 'cpu', 'cpu', 'cpu', 'cpu', 'webgpu', 'webgpu']);
    expect(chooseAutoProvider(cold({ forgoneSeconds: 1.33 })).reason).toMatch(
      /with 1\.33 s saved up by earlier small jobs/,
    );
  });

  it('without a GPU, or without the job size, it answers as before', () => {
    expect(chooseAutoProvider(cold({ candidates: ['cpu'] }))).toEqual({
      provider: 'cpu',
      reason: 'cpu: auto found no GPU provider that works on this computer.',
    });
    expect(chooseAutoProvider(cold({ work: undefined })).provider).toBe('webgpu');
  });
});
