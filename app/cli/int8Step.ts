/**
 * The int8 step shared by `crisp models quantize` and the opt-in `--int8` of `models fetch` / `models import`:
 * quantize one fp32 file on the CPU, and say in one sentence what `--precision auto` will do with the result.
 * Heavy modules load on first use: every command module is imported when the CLI starts.
 */
import path from 'node:path';
import {
  cpuFeatures,
  cpuKindLabel,
  loadInt8Variants,
  loadPrecision,
  type Int8Variant,
} from '../../engine/core/index.js';
import { loadCalibrationSet, loadInt8Build } from '../../engine/convert/index.js';

export interface Int8StepOptions {
  calibrationDir?: string;
  crops?: number;
  outDir?: string;
  /** Progress lines (calibration, rounding, each range method's score). */
  log: (message: string) => void;
}

/** "the bundled calibration set", a folder, or the generated fallback: said before the minutes of work start. */
export async function calibrationSource(calibrationDir: string | undefined): Promise<string> {
  if (calibrationDir) return `calibration photos from ${calibrationDir}`;
  const { hasBundledCalibration } = await loadCalibrationSet();
  return hasBundledCalibration()
    ? 'the bundled calibration set'
    : 'a generated calibration set: the bundled one is missing';
}

/**
 * Makes and stores the int8 variant of `file`. Calibration and quantization failures carry their catalog code
 * (bad-model-file) and sentence: printed as they are.
 */
export async function makeInt8(file: string, opts: Int8StepOptions): Promise<Int8Variant> {
  const { makeInt8Variant } = await loadInt8Build();
  const { variant } = await makeInt8Variant(file, {
    ...(opts.calibrationDir ? { calibrationDir: opts.calibrationDir } : {}),
    ...(opts.crops ? { crops: opts.crops } : {}),
    ...(opts.outDir ? { outDir: opts.outDir } : {}),
    onProgress: opts.log,
  });
  return variant;
}

/** Three lines: what was written, both bars with their measured figures, then what `--precision auto` does with it here. */
export async function describeInt8(variant: Int8Variant): Promise<string[]> {
  const [{ INT8_QUALITY_BAR_DB, INT8_SPEED_BAR }, { int8Verdict, int8WorstPsnrY }] = await Promise.all([
    loadInt8Variants(),
    loadPrecision(),
  ]);
  const m = variant.manifest;
  const worst = int8WorstPsnrY(variant);
  const where = m.heldout ? `worst of ${m.heldout.set}: ${m.heldout.worstImage}` : 'worst held-out crop';
  const speed = m.speed
    ? `speed ${m.speed.fp32OverInt8.toFixed(2)}× fp32 (CPU time, ${m.speed.tile}² tiles, on ${cpuKindLabel(m.speed.cpu)}; bar ${INT8_SPEED_BAR}×): ${m.speed.fp32OverInt8 >= INT8_SPEED_BAR ? 'met' : 'not met'}`
    : 'speed not measured';
  return [
    `${variant.path}: int8 (${m.quantizedConvs} of ${m.totalConvs} convolutions, ${m.method} ranges), ${m.psnrYVsFp32.toFixed(2)} dB PSNR-Y against fp32 (worst held-out crop ${(m.worstCropPsnrY ?? m.psnrYVsFp32).toFixed(2)} dB)`,
    `Bars: quality ${worst.toFixed(2)} dB against fp32 (${where}; bar ${INT8_QUALITY_BAR_DB} dB): ${m.passed ? 'met' : 'not met'}; ${speed}.`,
    `--precision auto on this CPU: ${int8Verdict(variant, cpuFeatures(), path.basename(variant.path).replace(/\.int8\.onnx$/, '')).reason}${m.passed ? '' : ' --precision int8 uses it anyway.'}`,
  ];
}

/**
 * `--int8` after an install: quantize with the defaults and print the result under the install line. A
 * failure is reported on stderr like a refused install (the fp32 model stays installed); false means it failed.
 */
export async function int8AfterInstall(name: string, file: string): Promise<boolean> {
  process.stderr.write(`${name}: making the int8 variant (${await calibrationSource(undefined)})…\n`);
  try {
    const variant = await makeInt8(file, { log: (m) => process.stderr.write(`  ${m}\n`) });
    for (const line of await describeInt8(variant)) process.stdout.write(`${name}: ${line}\n`);
    return true;
  } catch (e) {
    process.stderr.write(
      `${name}: installed, but no int8 variant: ${((e as Error).message ?? String(e)).split('\n')[0]}\n`,
    );
    return false;
  }
}
