/**
 * User-imported ("custom") models: any supported weights file converted to ONNX, smoke-tested and
 * installed under <modelsDir>/custom, with a small JSON registry beside them so they can be listed
 * with their detected scale and origin. Kept apart from catalog files so an import can never
 * overwrite a catalog model.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFile, rename, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ConvertOptions, SourceFormat } from '../convert/convert.js';
import type { SmokeRunner } from './install.js';
import { licenceFromFile } from './licence.js';
import { CrispError } from '../../contract/errorCatalog.js';
import { CUSTOM_REGISTRY, customModelsDir } from './modelFiles.js';

// Where custom models live (light: no zod), kept importable from here.
export { CUSTOM_DIR, CUSTOM_REGISTRY, customModelsDir } from './modelFiles.js';

const NAME_RE = /^[A-Za-z0-9][\w.-]{0,63}$/;

const customModelSchema = z.object({
  name: z.string().regex(NAME_RE),
  file: z.string().regex(/^[\w.-]+\.onnx$/),
  scale: z.number().int().min(1).max(16),
  format: z.enum(['pth', 'safetensors', 'ncnn', 'onnx']),
  source: z.string(),
  description: z.string(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  importedAt: z.string(),
  // Recorded since issue 28; registries written before lack them.
  architecture: z.string().max(64).optional(),
  parameters: z.number().int().nonnegative().optional(),
  bytes: z.number().int().nonnegative().optional(),
  licence: z.string().max(100).optional(),
  window: z.number().int().min(1).max(256).optional(),
});

export type CustomModel = z.infer<typeof customModelSchema> & { format: SourceFormat };

export interface CustomModelListing extends CustomModel {
  /** Absolute path of the ONNX file. */
  path: string;
}

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class CustomModelError extends CrispError {
  override readonly name = 'CustomModelError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

async function readRegistry(modelsDir: string): Promise<CustomModel[]> {
  const file = path.join(customModelsDir(modelsDir), CUSTOM_REGISTRY);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [];
  }
  const parsed = z.array(customModelSchema).safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new CustomModelError(`custom model registry ${file} is invalid: ${parsed.error.issues[0]?.message ?? ''}`);
  return parsed.data;
}

async function writeRegistry(modelsDir: string, models: CustomModel[]): Promise<void> {
  const dir = customModelsDir(modelsDir);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, CUSTOM_REGISTRY);
  const tmp = `${file}.${randomUUID()}.tmp`;
  await writeFile(tmp, `${JSON.stringify(models, null, 2)}\n`);
  await rename(tmp, file);
}

/** Custom models whose ONNX file is present, in import order. */
export async function listCustomModels(modelsDir: string): Promise<CustomModelListing[]> {
  const dir = customModelsDir(modelsDir);
  return (await readRegistry(modelsDir))
    .map((m) => ({ ...m, path: path.join(dir, m.file) }))
    .filter((m) => existsSync(m.path));
}

export interface ImportOptions extends ConvertOptions {
  modelsDir: string;
  /** Name to list the model under (default: the file name without extension). */
  name?: string;
  /** The licence the user states (else read from the file's metadata or name when present). */
  licence?: string;
  smokeRun?: SmokeRunner;
}

export function defaultCustomName(file: string): string {
  const base = path.basename(file).replace(/\.(pth|pt|ckpt|safetensors|onnx|param|bin)$/i, '');
  const cleaned = base
    .replace(/[^\w.-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return cleaned || 'custom-model';
}

/** Converts (if needed), smoke-tests and installs one file as a custom model; replaces a same-named one. */
export async function importCustomModel(file: string, opts: ImportOptions): Promise<CustomModelListing> {
  const name = opts.name ?? defaultCustomName(file);
  if (!NAME_RE.test(name))
    throw new CustomModelError(`invalid model name ${JSON.stringify(name)} (letters, digits, . _ - ; at most 64)`);
  // Loaded here, not at the top: listing imported models (crisp models list, name lookups) must not load
  // the converters or onnxruntime.
  const [{ architectureOf, convertModelFile, tilingOf }, { installModel }] = await Promise.all([
    import('../convert/convert.js'),
    import('./install.js'),
  ]);
  const converted = await convertModelFile(file, { ...opts, rgbPorts: true });
  const fileName = `${name}.onnx`;
  const installed = await installModel(converted.onnx, {
    modelsDir: customModelsDir(opts.modelsDir),
    fileName,
    ...(opts.smokeRun ? { run: opts.smokeRun } : {}),
  });
  const licence = opts.licence?.trim() || licenceFromFile(path.basename(file), converted.metadata);
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
    ...(converted.spec && tilingOf(converted.spec).window > 1 ? { window: tilingOf(converted.spec).window } : {}),
    ...(licence ? { licence: licence.slice(0, 100) } : {}),
  };
  const models = (await readRegistry(opts.modelsDir)).filter((m) => m.name !== name);
  models.push(entry);
  await writeRegistry(opts.modelsDir, models);
  return { ...entry, path: installed.path };
}

export async function removeCustomModel(modelsDir: string, name: string): Promise<boolean> {
  const models = await readRegistry(modelsDir);
  const found = models.find((m) => m.name === name);
  if (!found) return false;
  await writeRegistry(
    modelsDir,
    models.filter((m) => m.name !== name),
  );
  await rm(path.join(customModelsDir(modelsDir), found.file), { force: true });
  return true;
}
