import { describe, expect, it } from 'vitest';
import { int8Verdict } from '../../engine/core/inference/precision.js';
import {
  choosePrecision,
  int8FlagsFromCpuinfo,
  type CpuFeatures,
  type Fp16Manifest,
  type Int8Variant,
} from '../../engine/core/inference/index.js';

const VNNI: CpuFeatures = { int8Dot: ['avx512_vnni'], source: 'test' };
const NONE: CpuFeatures = { int8Dot: [], source: 'test cpuinfo' };

function variant(passed: boolean, psnr = passed ? 41.2 : 36.8): Int8Variant {
  return {
    path: '/models/int8/m.int8.onnx',
    manifest: {
      format: 1,
      source: { file: 'm.onnx', sha256: 'a'.repeat(64), bytes: 1 },
      createdAt: '2026-01-01T00:00:00.000Z',
      calibration: { kind: 'synthetic', crops: 32 },
      method: 'mse',
      quantizedConvs: 16,
      totalConvs: 18,
      psnrYVsFp32: psnr,
      evaluatedCrops: 8,
      passed,
    },
  };
}

const base = { model: 'realesr-general-x4v3', name: 'service-lite-4x' };

describe('CPU int8 feature detection', () => {
  it('finds VNNI, AVX-VNNI, AMX and ARM dot product in /proc/cpuinfo, and nothing on an AVX2-only CPU', () => {
    const epyc = 'processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni avx_vnni avx512_bf16\n';
    expect(int8FlagsFromCpuinfo(epyc)).toEqual(['avx512_vnni', 'avx_vnni']);
    expect(int8FlagsFromCpuinfo('flags\t\t: fpu sse2 avx2 fma amx_tile amx_int8\n')).toEqual(['amx_int8']);
    expect(int8FlagsFromCpuinfo('Features\t: fp asimd crc32 atomics asimddp\n')).toEqual(['asimddp']);
    expect(int8FlagsFromCpuinfo('flags\t\t: fpu sse2 avx avx2 fma\n')).toEqual([]);
  });
});

describe('choosePrecision', () => {
  it('auto picks int8 only on the CPU provider, with the instructions and a variant that passed its check', () => {
    expect(
      choosePrecision({ ...base, requested: 'auto', provider: 'cpu', cpu: VNNI, variant: variant(true) }),
    ).toMatchObject({ precision: 'int8', variant: { path: '/models/int8/m.int8.onnx' } });
    for (const c of [
      { provider: 'cpu', cpu: NONE, variant: variant(true) },
      { provider: 'cuda', cpu: VNNI, variant: variant(true) },
      { provider: 'cpu', cpu: VNNI, variant: undefined },
      { provider: 'cpu', cpu: VNNI, variant: variant(false) },
    ]) {
      // auto falls back silently: fp32 is what the user gets without asking for anything.
      expect(choosePrecision({ ...base, requested: 'auto', ...c })).toEqual({ precision: 'fp32' });
    }
  });

  it('an explicit int8 on a CPU without the instructions runs fp32 and says why', () => {
    const c = choosePrecision({ ...base, requested: 'int8', provider: 'cpu', cpu: NONE, variant: variant(true) });
    expect(c.precision).toBe('fp32');
    expect(c.variant).toBeUndefined();
    expect(c.notice).toBe(
      'Crisp: running realesr-general-x4v3 in fp32 instead of int8: this CPU has no int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI, AMX or ARM dot product; checked test cpuinfo), so int8 would not be faster.',
    );
  });

  it('an explicit int8 without a variant or on a GPU provider says what to do; fp32 never notices', () => {
    expect(
      choosePrecision({ ...base, requested: 'int8', provider: 'cpu', cpu: VNNI, variant: undefined }).notice,
    ).toMatch(/no int8 variant yet\. Make one with "crisp models quantize service-lite-4x"\.$/);
    expect(
      choosePrecision({ ...base, requested: 'int8', provider: 'webgpu', cpu: VNNI, variant: variant(true) }),
    ).toMatchObject({ precision: 'fp32', notice: expect.stringMatching(/webgpu provider keeps fp32/) });
    expect(choosePrecision({ ...base, requested: 'fp32', provider: 'cpu', cpu: VNNI, variant: variant(true) })).toEqual(
      { precision: 'fp32' },
    );
  });

  it('an explicit int8 uses a below-bar variant but says its measured quality', () => {
    const c = choosePrecision({
      ...base,
      requested: 'int8',
      provider: 'cpu',
      cpu: VNNI,
      variant: variant(false, 36.8),
    });
    expect(c.precision).toBe('int8');
    expect(c.notice).toMatch(/measured 36\.8 dB against fp32, below the quality bar/);
  });

  it('auto needs the speed bar too: trusted on the CPU kind it was measured on, the instructions decide elsewhere', () => {
    const epyc: CpuFeatures = { int8Dot: ['avx512_vnni'], source: 'test', model: 'AMD EPYC' };
    const measured = (ratio: number, model = 'AMD EPYC'): Int8Variant => {
      const v = variant(true);
      return {
        ...v,
        manifest: {
          ...v.manifest,
          speed: {
            fp32OverInt8: ratio,
            wallFp32OverInt8: ratio,
            tile: 256,
            runs: 3,
            cpu: { model, int8Dot: ['avx512_vnni'] },
          },
        },
      };
    };
    const auto = (v: Int8Variant, cpu = epyc) =>
      choosePrecision({ ...base, requested: 'auto', provider: 'cpu', cpu, variant: v });
    expect(auto(measured(2.4)).precision).toBe('int8');
    expect(int8Verdict(measured(2.4), epyc, 'service-lite-4x').reason).toMatch(
      /^int8: 41\.2 dB .*2\.40× fp32 speed measured on this CPU kind/,
    );
    // Measured too slow on this very CPU kind: fp32, and list says which bar failed.
    expect(auto(measured(1.5))).toEqual({ precision: 'fp32' });
    expect(int8Verdict(measured(1.5), epyc, 'service-lite-4x')).toMatchObject({ auto: false, failed: 'speed' });
    // Measured elsewhere (another model name, or none known): the int8 instructions decide, and list says so.
    const other: CpuFeatures = { int8Dot: ['avx_vnni'], source: 'test', model: 'Intel Core i7-12700' };
    expect(auto(measured(1.5), other).precision).toBe('int8');
    expect(int8Verdict(measured(2.4), other, 'service-lite-4x').reason).toMatch(
      /speed measured on AMD EPYC \(avx512_vnni\) \(2\.40×\), not on this CPU: trusted because this CPU has avx_vnni/,
    );
    // An explicit int8 still runs a too-slow variant, saying so.
    const c = choosePrecision({ ...base, requested: 'int8', provider: 'cpu', cpu: epyc, variant: measured(1.5) });
    expect(c).toMatchObject({
      precision: 'int8',
      notice: expect.stringMatching(/only 1\.50× fp32 speed on this CPU, below the speed bar/),
    });
  });
});

function fp16(passed: boolean, worst = passed ? 96.79 : 41.3): Fp16Manifest {
  return {
    format: 1,
    source: { file: 'm.onnx', sha256: 'a'.repeat(64), bytes: 1 },
    graphSha256: 'b'.repeat(64),
    createdAt: '2026-01-01T00:00:00.000Z',
    set: 'Set5 + Set14 ×4',
    images: 19,
    worstPsnrY: worst,
    worstImage: 'butterfly',
    meanPsnrY: worst + 2,
    measuredOn: 'test',
    passed,
  };
}

describe('choosePrecision on GPU providers (fp16)', () => {
  const gpu = { ...base, cpu: VNNI, variant: variant(true) };
  it('auto picks fp16 on a GPU provider only with a measured manifest that passed, silently', () => {
    for (const provider of ['webgpu', 'cuda', 'dml', 'coreml'])
      expect(choosePrecision({ ...gpu, requested: 'auto', provider, fp16: fp16(true) })).toEqual({ precision: 'fp16' });
    expect(choosePrecision({ ...gpu, requested: 'auto', provider: 'webgpu', fp16: fp16(false) })).toEqual({
      precision: 'fp32',
    });
    expect(choosePrecision({ ...gpu, requested: 'auto', provider: 'webgpu', fp16: undefined })).toEqual({
      precision: 'fp32',
    });
    // fp32 asked for stays fp32 even with a passed manifest.
    expect(choosePrecision({ ...gpu, requested: 'fp32', provider: 'webgpu', fp16: fp16(true) })).toEqual({
      precision: 'fp32',
    });
  });

  it('the CPU provider never runs fp16: auto keeps int8/fp32, an explicit fp16 runs fp32 and says why', () => {
    expect(choosePrecision({ ...gpu, requested: 'auto', provider: 'cpu', fp16: fp16(true) }).precision).toBe('int8');
    expect(choosePrecision({ ...gpu, requested: 'fp16', provider: 'cpu', fp16: fp16(true) })).toEqual({
      precision: 'fp32',
      notice:
        'Crisp: running realesr-general-x4v3 in fp32 instead of fp16: fp16 is for GPU providers; on the CPU provider onnxruntime computes it in fp32 anyway.',
    });
  });

  it('an explicit fp16 on a GPU runs it, saying so when it is unmeasured or below the bar', () => {
    expect(choosePrecision({ ...gpu, requested: 'fp16', provider: 'webgpu', fp16: fp16(true) })).toEqual({
      precision: 'fp16',
    });
    expect(choosePrecision({ ...gpu, requested: 'fp16', provider: 'webgpu', fp16: fp16(false) })).toEqual({
      precision: 'fp16',
      notice:
        'Crisp: realesr-general-x4v3 fp16 measured 41.3 dB against fp32 (butterfly), below the 50 dB bar; using it because --precision fp16 was asked.',
    });
    expect(choosePrecision({ ...gpu, requested: 'fp16', provider: 'cuda', fp16: undefined })).toEqual({
      precision: 'fp16',
      notice:
        'Crisp: realesr-general-x4v3 fp16 was never measured against fp32; using it because --precision fp16 was asked.',
    });
  });
});
