/**
 * `crisp models import FILE` and the app's import: converts a weights file (any format convert.ts reads),
 * smoke-tests and installs it under <modelsDir>/custom, and records it in the custom-model registry
 * (engine/core/models/customModels.ts, which lists and removes them).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { architectureOf, tilingOf } from '../architectures/registry.js';
import { convertModelFile, type ConvertOptions } from '../convert.js';
import { installModel, type SmokeRunner } from './installModel.js';
import {
  checkCustomName,
  customModelsDir,
  defaultCustomName,
  recordCustomModel,
  type CustomModel,
  type CustomModelListing,
} from '../../core/models/customModels.js';
import { licenceFromFile } from '../../core/models/licence.js';

export interface ImportOptions extends ConvertOptions {
  modelsDir: string;
  /** Name to list the model under (default: the file name without extension). */
  name?: string;
  /** The licence the user states (else read from the file's metadata or name when present). */
  licence?: string;
  smokeRun?: SmokeRunner;
}

/** Converts (if needed), smoke-tests and installs one file as a custom model; replaces a same-named one. */
export async function importCustomModel(file: string, opts: ImportOptions): Promise<CustomModelListing> {
  const name = checkCustomName(opts.name ?? defaultCustomName(file));
  const converted = await convertModelFile(file, { ...opts, rgbPorts: true });
  const fileName = `${name}.onnx`;
  const installed = await installModel(converted.onnx, {
    modelsDir: customModelsDir(opts.modelsDir),
    fileName,
    ...(opts.smokeRun ? { run: opts.smokeRun } : {}),
  });
  const licence = opts.licence?.trim() || licenceFromFile(path.basename(file), converted.metadata);
  const window = converted.spec ? tilingOf(converted.spec).window : 1;
  const entry: CustomModel = {
    name,
    file: fileName,
    scale: installed.scale,
    format: converted.format,
    source: path.basename(file),
    description: converted.description,
    sha256: createHash('sha256').update(converted.onnx).digest('hex'),
    importedAt: new Date().toISOString(),
    architecture: converted.spec
      ? (architectureOf(converted.spec)?.name ?? converted.spec.kind)
      : converted.format === 'ncnn'
        ? 'ncnn'
        : 'ONNX',
    ...(converted.parameters !== null ? { parameters: converted.parameters } : {}),
    bytes: converted.onnx.length,
    ...(window > 1 ? { window } : {}),
    ...(licence ? { licence: licence.slice(0, 100) } : {}),
  };
  await recordCustomModel(opts.modelsDir, entry);
  return { ...entry, path: installed.path };
}
