/**
 * Which precision a model runs at. On a GPU provider, `auto` picks fp16 only where the model's fp16 variant was
 * measured ≥ FP16_QUALITY_BAR_DB from fp32 (fp16Variant.ts); the CPU provider never runs fp16 (onnxruntime's CPU
 * kernels cast it back to fp32, so it would be no faster). On the CPU provider, `auto` picks int8 only where both of the bars hold: the
 * variant's worst held-out image is ≥ INT8_QUALITY_BAR_DB from fp32, and it is ≥ INT8_SPEED_BAR × faster
 * than fp32 on this CPU. The speed-up is trusted only when it was measured on the same CPU kind (model name
 * and int8 instructions); on any other CPU, `auto` falls back to the hardware test the speed-up rests on
 * (int8 dot-product instructions present: every such machine measured gave 2.1–2.4×) and `crisp models
 * quantize NAME` re-measures here. An explicit `int8` that cannot be honoured runs fp32 and says why in
 * one notice (never silently slower).
 */
import { cpuKindLabel, sameCpuKind, type CpuFeatures } from './cpuFeatures.js';
import { FP16_QUALITY_BAR_DB, type Fp16Manifest } from './fp16Variant.js';
import { INT8_QUALITY_BAR_DB, INT8_SPEED_BAR, type Int8Variant } from './int8Variant.js';
import { PRECISIONS, type Precision, type PrecisionRequest } from './providers.js';

export { PRECISIONS, type Precision, type PrecisionRequest };

export interface PrecisionChoice {
  precision: Precision;
  /** The int8 file to load when precision is int8. */
  variant?: Int8Variant;
  /** One sentence for the user when an explicit request could not be honoured (or was risky). */
  notice?: string;
}

export interface PrecisionInput {
  requested: PrecisionRequest;
  provider: string;
  cpu: CpuFeatures;
  /** Found int8 variant of the model, if any. */
  variant: Int8Variant | undefined;
  /** GPU providers: the measured fp16 manifest of the model, if any (whose graph is what the converter builds). */
  fp16?: Fp16Manifest | undefined;
  /** Model label for messages, e.g. "realesr-general-x4v3". */
  model: string;
  /** The contract/custom name for the "crisp models quantize" hint. */
  name: string;
}

/** Worst held-out quality of a variant: the whole-image set when it has one, else the held-out crops. */
export function int8WorstPsnrY(v: Int8Variant): number {
  const m = v.manifest;
  return m.heldout?.worstPsnrY ?? m.worstCropPsnrY ?? m.psnrYVsFp32;
}

export interface Int8Verdict {
  /** Whether `--precision auto` runs this variant on the CPU provider of this machine. */
  auto: boolean;
  /** Which bar failed, if one did. */
  failed?: 'instructions' | 'variant' | 'quality' | 'speed';
  /** One sentence: both bars with their figures, or why int8 is not used. */
  reason: string;
}

/** The two bars for one model on this CPU (what `auto` does on the CPU provider, and `crisp models list` says). */
export function int8Verdict(variant: Int8Variant | undefined, cpu: CpuFeatures, name: string): Int8Verdict {
  if (cpu.int8Dot.length === 0)
    return {
      auto: false,
      failed: 'instructions',
      reason: `fp32: this CPU has no int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI, AMX or ARM dot product; checked ${cpu.source}), so int8 would not be faster.`,
    };
  if (!variant)
    return {
      auto: false,
      failed: 'variant',
      reason: `fp32: no int8 variant yet. Make one with "crisp models quantize ${name}".`,
    };
  const worst = int8WorstPsnrY(variant);
  const where = variant.manifest.heldout ? `worst of ${variant.manifest.heldout.set}` : 'worst held-out crop';
  const quality = `${worst.toFixed(1)} dB from fp32 (${where}; bar ${INT8_QUALITY_BAR_DB} dB)`;
  if (!variant.manifest.passed)
    return { auto: false, failed: 'quality', reason: `fp32: int8 is ${quality}, below the quality bar.` };
  const speed = variant.manifest.speed;
  if (speed && sameCpuKind(speed.cpu, cpu)) {
    const measured = `${speed.fp32OverInt8.toFixed(2)}× fp32 speed measured on this CPU kind (bar ${INT8_SPEED_BAR}×)`;
    if (speed.fp32OverInt8 < INT8_SPEED_BAR)
      return { auto: false, failed: 'speed', reason: `fp32: int8 is ${quality} but only ${measured}.` };
    return { auto: true, reason: `int8: ${quality}, ${measured}.` };
  }
  const elsewhere = speed
    ? `speed measured on ${cpuKindLabel(speed.cpu)} (${speed.fp32OverInt8.toFixed(2)}×), not on this CPU`
    : 'speed not measured';
  return {
    auto: true,
    reason: `int8: ${quality}; ${elsewhere}: trusted because this CPU has ${cpu.int8Dot.join(', ')} (re-measure with "crisp models quantize ${name}").`,
  };
}

/** GPU providers: fp16 where its manifest passed (auto) or where asked (with a notice when unmeasured or below the bar). */
function gpuPrecision(i: PrecisionInput): PrecisionChoice {
  const m = i.fp16;
  if (i.requested === 'int8')
    return {
      precision: 'fp32',
      notice: `Crisp: running ${i.model} in fp32 instead of int8: int8 is for the CPU provider; the ${i.provider} provider keeps fp32.`,
    };
  if (i.requested === 'auto') return m?.passed ? { precision: 'fp16' } : { precision: 'fp32' };
  if (!m)
    return {
      precision: 'fp16',
      notice: `Crisp: ${i.model} fp16 was never measured against fp32; using it because --precision fp16 was asked.`,
    };
  if (!m.passed)
    return {
      precision: 'fp16',
      notice: `Crisp: ${i.model} fp16 measured ${m.worstPsnrY.toFixed(1)} dB against fp32 (${m.worstImage}), below the ${FP16_QUALITY_BAR_DB} dB bar; using it because --precision fp16 was asked.`,
    };
  return { precision: 'fp16' };
}

export function choosePrecision(i: PrecisionInput): PrecisionChoice {
  if (i.requested === 'fp32') return { precision: 'fp32' };
  if (i.provider !== 'cpu') return gpuPrecision(i);
  if (i.requested === 'fp16')
    return {
      precision: 'fp32',
      notice: `Crisp: running ${i.model} in fp32 instead of fp16: fp16 is for GPU providers; on the CPU provider onnxruntime computes it in fp32 anyway.`,
    };
  const explicit = i.requested === 'int8';
  const fp32 = (why: string): PrecisionChoice =>
    explicit
      ? { precision: 'fp32', notice: `Crisp: running ${i.model} in fp32 instead of int8: ${why}` }
      : { precision: 'fp32' };
  if (i.cpu.int8Dot.length === 0) {
    return fp32(
      `this CPU has no int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI, AMX or ARM dot product; checked ${i.cpu.source}), so int8 would not be faster.`,
    );
  }
  if (!i.variant) return fp32(`it has no int8 variant yet. Make one with "crisp models quantize ${i.name}".`);
  const verdict = int8Verdict(i.variant, i.cpu, i.name);
  if (!verdict.auto) {
    if (explicit) {
      const why =
        verdict.failed === 'speed'
          ? `measured only ${i.variant.manifest.speed?.fp32OverInt8.toFixed(2)}× fp32 speed on this CPU, below the speed bar`
          : `measured ${int8WorstPsnrY(i.variant).toFixed(1)} dB against fp32, below the quality bar`;
      return {
        precision: 'int8',
        variant: i.variant,
        notice: `Crisp: ${i.model} int8 ${why}; using it because --precision int8 was asked.`,
      };
    }
    return { precision: 'fp32' };
  }
  return { precision: 'int8', variant: i.variant };
}
