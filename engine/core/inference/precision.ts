/**
 * Which precision a model runs at. `auto` is conservative: int8 only on the CPU provider, on a CPU with
 * int8 dot-product instructions, for a model whose int8 variant passed its quality check. An explicit
 * `int8` that cannot be honoured runs fp32 and says why in one notice (never silently slower).
 */
import type { CpuFeatures } from './cpuFeatures.js';
import type { Int8Variant } from './int8Variant.js';

export const PRECISIONS = ['auto', 'fp32', 'int8'] as const;
export type PrecisionRequest = (typeof PRECISIONS)[number];
export type Precision = Exclude<PrecisionRequest, 'auto'>;

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
  /** Model label for messages, e.g. "realesr-general-x4v3". */
  model: string;
  /** The contract/custom name for the "crisp models quantize" hint. */
  name: string;
}

export function choosePrecision(i: PrecisionInput): PrecisionChoice {
  if (i.requested === 'fp32') return { precision: 'fp32' };
  const explicit = i.requested === 'int8';
  const fp32 = (why: string): PrecisionChoice =>
    explicit
      ? { precision: 'fp32', notice: `Crisp: running ${i.model} in fp32 instead of int8: ${why}` }
      : { precision: 'fp32' };
  if (i.provider !== 'cpu') return fp32(`int8 is for the CPU provider; the ${i.provider} provider keeps fp32.`);
  if (i.cpu.int8Dot.length === 0) {
    return fp32(
      `this CPU has no int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI, AMX or ARM dot product; checked ${i.cpu.source}), so int8 would not be faster.`,
    );
  }
  if (!i.variant) return fp32(`it has no int8 variant yet. Make one with "crisp models quantize ${i.name}".`);
  if (!i.variant.manifest.passed) {
    if (explicit) {
      return {
        precision: 'int8',
        variant: i.variant,
        notice: `Crisp: ${i.model} int8 measured ${i.variant.manifest.psnrYVsFp32.toFixed(1)} dB against fp32, below the quality bar; using it because --precision int8 was asked.`,
      };
    }
    return { precision: 'fp32' };
  }
  return { precision: 'int8', variant: i.variant };
}
