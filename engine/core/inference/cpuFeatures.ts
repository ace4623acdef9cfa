/**
 * Does this CPU have the int8 dot-product instructions that make an int8 model faster than fp32?
 * onnxruntime's int8 kernels (u8s8 QLinearConv) use AVX-512 VNNI / AVX-VNNI / AMX on x86 and the dot-product
 * extension on ARM; without them they fall back to paths that are barely faster than fp32 (and on AVX2
 * alone can saturate), so `--precision auto` only picks int8 where one of these is present.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface CpuFeatures {
  /** The instructions found that speed up int8 (empty: none). */
  int8Dot: string[];
  /** How they were found, for messages and the bench header. */
  source: string;
  /**
   * The CPU's model name (/proc/cpuinfo "model name", or what the OS reports): with int8Dot, the CPU kind an
   * int8 variant's measured speed-up is trusted on. Absent where unknown (then no measurement is trusted).
   */
  model?: string;
}

/** One line naming a CPU kind, as int8 manifests record it: model name and the int8 instructions found. */
export function cpuKindLabel(k: { model?: string | undefined; int8Dot: readonly string[] }): string {
  return `${k.model ?? 'unknown CPU'} (${k.int8Dot.length > 0 ? k.int8Dot.join(' ') : 'no int8 dot product'})`;
}

/** Same CPU kind: same model name and the same int8 instructions (a VM may hide some of a model's flags). */
export function sameCpuKind(
  a: { model?: string | undefined; int8Dot: readonly string[] },
  b: { model?: string | undefined; int8Dot: readonly string[] },
): boolean {
  return (
    a.model !== undefined &&
    a.model === b.model &&
    a.int8Dot.length === b.int8Dot.length &&
    a.int8Dot.every((f) => b.int8Dot.includes(f))
  );
}

/** x86 and ARM flag names (as /proc/cpuinfo spells them) that give fast int8 dot products. */
export const INT8_DOT_FLAGS = ['avx512_vnni', 'avx_vnni', 'amx_int8', 'asimddp'] as const;

/** Reads the features from a /proc/cpuinfo text (exported for tests). */
export function int8FlagsFromCpuinfo(cpuinfo: string): string[] {
  const flags = new Set<string>();
  for (const line of cpuinfo.split('\n')) {
    const m = /^(flags|Features)\s*:\s*(.*)$/.exec(line);
    if (m) for (const f of m[2]!.trim().split(/\s+/)) flags.add(f);
  }
  return INT8_DOT_FLAGS.filter((f) => flags.has(f));
}

let detected: CpuFeatures | undefined;

/**
 * This machine's features. Linux reads /proc/cpuinfo; every Apple Silicon Mac has the ARM dot-product
 * extension; elsewhere (Windows, Intel Macs) there is no cheap portable probe, so int8 is not assumed.
 * CRISP_CPU_INT8=1 or 0 overrides the detection.
 */
export function cpuFeatures(env: NodeJS.ProcessEnv = process.env): CpuFeatures {
  // The override names no CPU model, so no recorded speed measurement is trusted under it (precision.ts).
  if (env.CRISP_CPU_INT8 === '1') return { int8Dot: ['override'], source: 'CRISP_CPU_INT8=1' };
  if (env.CRISP_CPU_INT8 === '0') return { int8Dot: [], source: 'CRISP_CPU_INT8=0' };
  if (detected) return detected;
  const model = os.cpus()[0]?.model.trim() || undefined;
  const named = (f: Omit<CpuFeatures, 'model'>): CpuFeatures => (model ? { ...f, model } : f);
  if (process.platform === 'linux') {
    try {
      detected = named({
        int8Dot: int8FlagsFromCpuinfo(readFileSync('/proc/cpuinfo', 'utf8')),
        source: '/proc/cpuinfo',
      });
    } catch {
      detected = named({ int8Dot: [], source: '/proc/cpuinfo unreadable' });
    }
  } else if (process.platform === 'darwin' && process.arch === 'arm64') {
    detected = named({ int8Dot: ['asimddp'], source: 'Apple Silicon' });
  } else {
    detected = named({ int8Dot: [], source: `no probe on ${process.platform}/${process.arch}` });
  }
  return detected;
}
