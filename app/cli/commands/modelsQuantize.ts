/**
 * `crisp models quantize NAME|FILE [--calibration DIR]`: make the int8 variant of an installed model for
 * fast CPU inference. The quality check runs as part of it; a variant below the bar is still written (an
 * explicit --precision int8 can use it) but `--precision auto` keeps fp32 for that model.
 */
import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { MODEL_NAMES } from '../../../engine/contract/index.js';
import { loadCustomModels, loadModelCatalog, modelSearchDirs, userModelsDir } from '../../../engine/core/index.js';
import { usageError } from '../cliError.js';
import { calibrationSource, describeInt8, makeInt8 } from '../int8Step.js';

/** --crops: a whole number of crops, 1–1024. */
function cropCount(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1024) throw usageError('--crops must be an integer from 1 to 1024');
  return n;
}

interface QuantizeCommandOptions {
  calibration?: string;
  out?: string;
  crops?: string;
  json?: boolean;
}

/** A contract name, `custom:<name>`, or a path to an .onnx file → the fp32 file to quantize. */
async function modelFile(target: string): Promise<string> {
  // Loaded here, not at the top: the CLI imports every command module before it parses arguments.
  const [{ resolveModel }, { listCustomModels }] = await Promise.all([loadModelCatalog(), loadCustomModels()]);
  if ((MODEL_NAMES as readonly string[]).includes(target))
    return resolveModel(target as (typeof MODEL_NAMES)[number], modelSearchDirs()).path;
  if (target.startsWith('custom:')) {
    const name = target.slice('custom:'.length);
    const found = (await listCustomModels(userModelsDir())).find((m) => m.name === name);
    if (!found) throw usageError(`No imported model named '${name}'. "crisp models list" shows the installed ones.`);
    return found.path;
  }
  if (existsSync(target) && statSync(target).isFile()) {
    if (!target.toLowerCase().endsWith('.onnx'))
      throw usageError(`${target} is not an .onnx file. Import other formats first with "crisp models import".`);
    return target;
  }
  throw usageError(`'${target}' is neither a model name nor an .onnx file. "crisp models list" shows the model names.`);
}

export function registerModelsQuantize(models: Command): void {
  models
    .command('quantize')
    .description('Make the int8 variant of a model for faster CPU upscaling, and measure its quality')
    .argument('<model>', 'model name (e.g. service-lite-4x, custom:name) or an .onnx file')
    .option(
      '--calibration <dir>',
      'folder of photos like the ones you upscale (default: the 48 bundled crops of openly licensed photos and illustrations)',
    )
    .option('--crops <n>', 'calibration crops of 64×64 (default: 32 from --calibration, all 48 bundled ones otherwise)')
    .option(
      '--out <dir>',
      'where to write the int8 model (default: the int8 folder of the user models directory, or $CRISP_INT8_DIR)',
    )
    .option('--json', 'print the manifest as JSON')
    .action(async (target: string, opts: QuantizeCommandOptions) => {
      const crops = cropCount(opts.crops);
      const file = await modelFile(target);
      const log = (m: string) => {
        if (!opts.json) process.stderr.write(`${m}\n`);
      };
      log(`Quantizing ${file} (${await calibrationSource(opts.calibration)})…`);
      const variant = await makeInt8(file, {
        ...(opts.calibration ? { calibrationDir: opts.calibration } : {}),
        ...(crops ? { crops } : {}),
        ...(opts.out ? { outDir: opts.out } : {}),
        log: (m) => log(`  ${m}`),
      });
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ path: variant.path, ...variant.manifest }, null, 2)}\n`);
        return;
      }
      for (const line of await describeInt8(variant)) process.stdout.write(`${line}\n`);
    });
}
