/**
 * `crisp models import <file…> [--name N]`: convert a .pth / .safetensors / ncnn .param(+.bin) /
 * .onnx file and install it as a custom model, with the scale the smoke test measured. One line per file:
 * imported ones on stdout, refused ones on stderr (`<file>: not imported: <why>`); any refusal exits 1.
 */
import { Command } from 'commander';
import { loadFaceImport, loadModelImport } from '../../../engine/convert/index.js';
import { customModelSummary, userModelsDir } from '../../../engine/core/index.js';
import { usageError } from '../cliError.js';
import { int8AfterInstall } from '../int8Step.js';

interface ImportCommandOptions {
  name?: string;
  dir?: string;
  activation?: string;
  face?: boolean;
  int8?: boolean;
  licence?: string;
}

export function registerModelsImport(models: Command): void {
  models
    .command('import')
    .description('Import a .pth, .safetensors, .onnx or ncnn .param/.bin model as a custom model')
    .argument('<files...>', 'model files')
    .option('--name <name>', 'name to list the model under (one file only)')
    .option('--dir <dir>', 'models directory (default: your user models directory)')
    .option(
      '--face',
      'import a face restorer (GFPGAN v1.3/v1.4 .pth, or .onnx: 1×3×512×512 RGB in [-1, 1]) for face enhancement',
    )
    .option('--activation <act>', 'SRVGGNetCompact without PReLU weights: relu or leakyrelu', 'leakyrelu')
    .option(
      '--licence <id>',
      "the model's licence (SPDX id such as CC-BY-NC-SA-4.0), recorded and shown when the file does not state one",
    )
    .option('--int8', 'also make the int8 variant for faster CPU upscaling (minutes; see "crisp models quantize")')
    .action(async (files: string[], opts: ImportCommandOptions) => {
      if (opts.name && files.length > 1) throw usageError('--name can only be used with a single file');
      if (opts.int8 && opts.face) throw usageError('--int8 applies to upscaling models, not face models');
      const act = opts.activation;
      if (act !== 'relu' && act !== 'leakyrelu') throw usageError('--activation must be relu or leakyrelu');
      const { importCustomModel } = await loadModelImport();
      const modelsDir = opts.dir ?? userModelsDir();
      let failed = 0;
      for (const file of files) {
        try {
          if (opts.face) {
            // Loaded here: it pulls in onnxruntime, and every command module is imported at startup.
            const { importFaceModel } = await loadFaceImport();
            const f = await importFaceModel(file, { modelsDir, ...(opts.name ? { name: opts.name } : {}) });
            process.stdout.write(`${file}: imported as face model ${f.name} → ${f.path}\n`);
            continue;
          }
          const m = await importCustomModel(file, {
            modelsDir,
            srvggActivation: act,
            ...(opts.name ? { name: opts.name } : {}),
            ...(opts.licence ? { licence: opts.licence } : {}),
          });
          process.stdout.write(`${file}: imported as ${m.name} (x${m.scale}, ${m.description}) → ${m.path}\n`);
          process.stdout.write(`  ${customModelSummary(m)}\n`);
          if (!m.licence) {
            process.stdout.write(
              '  the file states no licence: check its source and record it with --licence (e.g. CC-BY-NC-SA-4.0)\n',
            );
          }
          if (opts.int8 && !(await int8AfterInstall(m.name, m.path))) failed++;
        } catch (e) {
          failed++;
          // A refusal is not a result: stderr, so stdout holds only what was imported (and scripts can read it).
          process.stderr.write(`${file}: not imported: ${((e as Error).message ?? String(e)).split('\n')[0]}\n`);
        }
      }
      if (failed > 0) process.exitCode = 1;
    });
}

/** Registers `import` under the program's `models` command (created if the lead has not yet). */
export function register(program: Command): void {
  const models =
    program.commands.find((c) => c.name() === 'models') ??
    program.command('models').description('List, download and import upscaling models');
  registerModelsImport(models);
}
