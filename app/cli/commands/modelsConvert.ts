/**
 * `crisp models convert IN OUT.onnx`: any checkpoint `models import` understands (and GFPGAN v1.3 / v1.4
 * face restorers) to ONNX, without installing it. OUT is written whole or not at all.
 */
import type { Command } from 'commander';
import { loadConvert } from '../../../engine/convert/index.js';
import { usageError } from '../cliError.js';

export function registerModelsConvert(models: Command): void {
  models
    .command('convert')
    .description(
      'Convert a .pth, .safetensors or ncnn model (or a GFPGAN v1.3/v1.4 face restorer) to ONNX without installing it',
    )
    .argument('<in>', 'model file')
    .argument('<out>', 'ONNX file to write')
    .action(async (input: string, output: string) => {
      if (!output.toLowerCase().endsWith('.onnx')) throw usageError(`${output}: the output must be an .onnx file`);
      // Loaded here: the converter and onnxruntime are heavy, and every command module is imported at startup.
      const [{ existsSync }, { rename, rm, writeFile }, path, { convertAnyFile }] = await Promise.all([
        import('node:fs'),
        import('node:fs/promises'),
        import('node:path'),
        loadConvert(),
      ]);
      if (!existsSync(input)) throw usageError(`${input} does not exist: check the path.`);
      if (!existsSync(path.dirname(path.resolve(output)))) throw usageError(`The folder of ${output} does not exist.`);
      let converted;
      try {
        converted = await convertAnyFile(input);
      } catch (e) {
        throw usageError(
          `${path.basename(input)} could not be converted: ${((e as Error).message ?? String(e)).split('\n')[0]}`,
        );
      }
      const tmp = `${output}.${process.pid}.tmp`;
      try {
        await writeFile(tmp, converted.onnx);
        await rename(tmp, output);
      } catch (e) {
        await rm(tmp, { force: true });
        throw usageError(`${output} could not be written: ${((e as Error).message ?? String(e)).split('\n')[0]}`);
      }
      const use =
        converted.kind === 'face'
          ? `install it with "crisp models import ${output} --face"`
          : `install it with "crisp models import ${output}"`;
      process.stdout.write(
        `${input} → ${output}: ${converted.description} (${(converted.onnx.length / 1048576).toFixed(1)} MB); ${use}\n`,
      );
    });
}
