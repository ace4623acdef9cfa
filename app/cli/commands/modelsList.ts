import type { Command } from 'commander';
import {
  architectureOf,
  cpuFeatures,
  customModelName,
  customModelsDir,
  FACE_MODELS,
  findDetector,
  installedFaceModels,
  licenceLabel,
  loadCustomModels,
  loadFp16Variants,
  loadInt8Variants,
  loadModelCatalog,
  loadPrecision,
  modelSearchDirs,
  sameCpuKind,
  userModelsDir,
  type CustomModelListing,
  type Fp16Manifest,
  type Int8Variant,
} from '../../../engine/core/index.js';
import { formatTable } from '../table.js';

/** An imported model as listed: `custom:<name>`, with the scale its import measured. */
function customRow(m: CustomModelListing) {
  return {
    name: customModelName(m.name),
    model: m.source,
    architecture: m.architecture ?? architectureOf(m.description),
    scale: m.scale,
    licence: licenceLabel(m.licence),
    kind: 'custom' as const,
    format: m.format,
    description: m.description,
    importedAt: m.importedAt,
    installed: true,
    path: m.path,
  };
}

interface Int8Summary {
  path: string;
  psnrYVsFp32: number;
  /** Worst held-out image (or crop) against fp32, what the quality bar is decided on. */
  worstPsnrY: number;
  passed: boolean;
  /** fp32 time ÷ int8 time as measured when the variant was made, and whether on this CPU kind. */
  speedUp: number | null;
  speedOnThisCpu: boolean;
  /** What `--precision auto` does with it on this machine's CPU provider, and why (both bars). */
  auto: boolean;
  reason: string;
}

function int8Summary(
  v: Int8Variant,
  verdict: { auto: boolean; reason: string },
  worst: number,
  sameKind: boolean,
): Int8Summary {
  return {
    path: v.path,
    psnrYVsFp32: v.manifest.psnrYVsFp32,
    worstPsnrY: worst,
    passed: v.manifest.passed,
    speedUp: v.manifest.speed?.fp32OverInt8 ?? null,
    speedOnThisCpu: sameKind,
    auto: verdict.auto,
    reason: verdict.reason,
  };
}

/** "yes" when auto runs int8 here, else which bar failed; with the worst-image dB and the speed-up. */
function int8Cell(v: Int8Summary | null): string {
  if (!v) return '-';
  const speed = v.speedUp === null ? 'speed ?' : `${v.speedUp.toFixed(1)}×${v.speedOnThisCpu ? '' : ' elsewhere'}`;
  const figures = `${v.worstPsnrY.toFixed(1)} dB, ${speed}`;
  if (v.auto) return `yes (${figures})`;
  return `${v.passed ? 'too slow' : 'below bar'} (${figures})`;
}

interface Fp16Summary {
  /** Worst and mean held-out image against fp32 (PSNR-Y), and where the fp16 graph ran for them. */
  worstPsnrY: number;
  meanPsnrY: number;
  measuredOn: string;
  /** Whether `--precision auto` runs fp16 on a GPU provider (the worst image reached the bar). */
  passed: boolean;
}

function fp16Summary(m: Fp16Manifest): Fp16Summary {
  return { worstPsnrY: m.worstPsnrY, meanPsnrY: m.meanPsnrY, measuredOn: m.measuredOn, passed: m.passed };
}

/** fp16 is for GPU providers: "GPU" when auto runs it there, else "below bar"; with the worst-image dB. */
function fp16Cell(v: Fp16Summary | null): string {
  if (!v) return '-';
  return `${v.passed ? 'GPU' : 'below bar'} (${v.worstPsnrY.toFixed(1)} dB)`;
}

export function registerModelsList(models: Command): void {
  models
    .command('list')
    .description(
      'Every contract model with its open model, licence, and whether it is installed; then imported custom models',
    )
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: { json?: boolean }) => {
      const [{ listModels }, { listCustomModels }] = await Promise.all([loadModelCatalog(), loadCustomModels()]);
      const dirs = modelSearchDirs();
      const customDir = userModelsDir();
      let custom: ReturnType<typeof customRow>[] = [];
      let customError: string | undefined;
      try {
        custom = (await listCustomModels(customDir)).map(customRow);
      } catch (e) {
        // The catalog is still worth listing when the custom registry is damaged.
        customError = e instanceof Error ? e.message : String(e);
      }
      const listed = [...listModels(dirs), ...custom];
      // Which models have an int8 variant (crisp models quantize), and whether it passed its quality check.
      // Loaded when listing, not at startup: the CLI imports every command module before parsing (see main.ts).
      const [{ findInt8Variant }, { int8Verdict, int8WorstPsnrY }, { findFp16Manifest, buildFp16 }] = await Promise.all(
        [loadInt8Variants(), loadPrecision(), loadFp16Variants()],
      );
      // A manifest counts only for the graph the converter builds today (as when a GPU session opens).
      const fp16Of = async (file: string) => {
        const found = await findFp16Manifest(file);
        return found ? (await buildFp16(file, found)).manifest : undefined;
      };
      const cpu = cpuFeatures();
      const rows = await Promise.all(
        listed.map(async (m) => {
          const v = m.path ? await findInt8Variant(m.path).catch(() => undefined) : undefined;
          const speed = v?.manifest.speed;
          const fp16 = m.path ? await fp16Of(m.path).catch(() => undefined) : undefined;
          return {
            ...m,
            fp16: fp16 ? fp16Summary(fp16) : null,
            int8: v
              ? int8Summary(
                  v,
                  int8Verdict(v, cpu, m.name),
                  int8WorstPsnrY(v),
                  speed !== undefined && sameCpuKind(speed.cpu, cpu),
                )
              : null,
          };
        }),
      );
      if (customError) process.stderr.write(`crisp: warning: ${customError}\n`);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
        return;
      }
      const table = rows.map((m) => [
        m.name,
        m.model,
        m.architecture,
        m.licence,
        m.installed ? 'installed' : 'not installed',
        `x${m.scale}`,
        int8Cell(m.int8),
        fp16Cell(m.fp16),
      ]);
      const header = ['MODEL', 'OPEN MODEL', 'ARCHITECTURE', 'LICENCE', 'STATUS', 'SCALE', 'INT8', 'FP16'];
      process.stdout.write(`${formatTable(header, table)}\n`);
      // Why int8 is or is not used, one line per model that has a variant (both bars, with their figures).
      const why = rows.filter((m) => m.int8 !== null);
      if (why.length > 0) {
        process.stdout.write(`\nint8 on this CPU (--precision auto):\n`);
        for (const m of why) process.stdout.write(`  ${m.name}: ${m.int8!.reason}\n`);
      }
      // Face restorers are not upscaling models: their own section, catalog entries then imported ones.
      const installedFaces = installedFaceModels(dirs);
      const faceRows = [
        ...FACE_MODELS.map((e) => {
          const have = installedFaces.find((m) => m.name === e.name);
          return [e.name, e.title, e.licence, have ? 'installed' : 'not installed'];
        }),
        ...installedFaces
          .filter((m) => m.name.startsWith('custom:'))
          .map((m) => [m.name, m.path, 'custom', 'installed']),
      ];
      const detector = findDetector(dirs);
      process.stdout.write(
        `\nFace models (--face):\n${formatTable(['FACE MODEL', 'OPEN MODEL', 'LICENCE', 'STATUS'], faceRows)}\n`,
      );
      process.stdout.write(
        `Face detector: ${detector ?? "not found (yunet_s_dynamic.onnx in a models folder's face/ folder)"}\n`,
      );
      process.stdout.write(`\nModels are looked up in:\n${dirs.map((d) => `  ${d}`).join('\n')}\n`);
      process.stdout.write(`Custom models ("crisp models import") are in:\n  ${customModelsDir(customDir)}\n`);
    });
}
