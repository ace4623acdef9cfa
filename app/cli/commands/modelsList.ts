import type { Command } from 'commander';
import type { CustomModelListing } from '../../../engine/core/models/customModels.js';
import { formatTable } from '../table.js';
import { FACE_MODELS, findDetector, installedFaceModels } from '../../../engine/core/faces/faceModels.js';
import type { Int8Variant } from '../../../engine/core/inference/int8Variant.js';
import { architectureOf, customModelName } from '../../../engine/core/models/modelNames.js';
import { licenceLabel } from '../../../engine/core/models/licence.js';

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

function int8Summary(v: Int8Variant | undefined): { path: string; psnrYVsFp32: number; passed: boolean } | null {
  return v ? { path: v.path, psnrYVsFp32: v.manifest.psnrYVsFp32, passed: v.manifest.passed } : null;
}

function int8Cell(v: ReturnType<typeof int8Summary>): string {
  if (!v) return '-';
  return `${v.passed ? 'yes' : 'below bar'} (${v.psnrYVsFp32.toFixed(1)} dB)`;
}

export function registerModelsList(models: Command): void {
  models
    .command('list')
    .description(
      'Every contract model with its open model, licence, and whether it is installed; then imported custom models',
    )
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: { json?: boolean }) => {
      const [{ listModels, modelSearchDirs, userModelsDir }, { customModelsDir, listCustomModels }] = await Promise.all(
        [import('../../../engine/core/models/catalog.js'), import('../../../engine/core/models/customModels.js')],
      );
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
      const { findInt8Variant } = await import('../../../engine/core/inference/int8Variant.js');
      const rows = await Promise.all(
        listed.map(async (m) => ({
          ...m,
          int8: m.path ? int8Summary(await findInt8Variant(m.path).catch(() => undefined)) : null,
        })),
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
      ]);
      const header = ['MODEL', 'OPEN MODEL', 'ARCHITECTURE', 'LICENCE', 'STATUS', 'SCALE', 'INT8'];
      process.stdout.write(`${formatTable(header, table)}\n`);
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
