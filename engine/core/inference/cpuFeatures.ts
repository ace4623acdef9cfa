/**
 * Does this CPU have the int8 dot-product instructions that make an int8 model faster than fp32?
 * onnxruntime's int8 kernels (u8s8 QLinearConv) use AVX-512 VNNI / AVX-VNNI / AMX on x86 and the dot-product
 * extension on ARM; without them they fall back to paths that are barely faster than fp32 (and on AVX2
 * alone can saturate), so `--precision auto` only picks int8 where one of these is present.
 */
import { readFileSync } from 'node:fs';

export interface CpuFeatures {
  /** The instructions found that speed up int8 (empty: none). */
  int8Dot: string[];
  /** How they were found, for messages and the bench header. */
  source: string;
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
  if (env.CRISP_CPU_INT8 === '1') return { int8Dot: ['override'], source: 'CRISP_CPU_INT8=1' };
  if (env.CRISP_CPU_INT8 === '0') return { int8Dot: [], source: 'CRISP_CPU_INT8=0' };
  if (detected) return detected;
  if (process.platform === 'linux') {
    try {
      detected = { int8Dot: int8FlagsFromCpuinfo(readFileSync('/proc/cpuinfo', 'utf8')), source: '/proc/cpuinfo' };
    } catch {
      detected = { int8Dot: [], source: '/proc/cpuinfo unreadable' };
    }
  } else if (process.platform === 'darwin' && process.arch === 'arm64') {
    detected = { int8Dot: ['asimddp'], source: 'Apple Silicon' };
  } else {
    detected = { int8Dot: [], source: `no probe on ${process.platform}/${process.arch}` };
  }
  return detected;
}
