/**
 * User-imported ("custom") models: any supported weights file converted to ONNX, smoke-tested and
 * installed under <modelsDir>/custom (engine/convert/install/importModel.ts), with a small JSON registry
 * beside them so they can be listed with their detected scale and origin. Kept apart from catalog files so an
 * import can never overwrite a catalog model. This module reads, lists and removes them: what resolving a
 * task's model needs, without the converters.
 */
import { randomUUID } from 'node:crypto';
import { readFile, rename, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
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

export type CustomModel = z.infer<typeof customModelSchema>;

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

export function defaultCustomName(file: string): string {
  const base = path.basename(file).replace(/\.(pth|pt|ckpt|safetensors|onnx|param|bin)$/i, '');
  const cleaned = base
    .replace(/[^\w.-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return cleaned || 'custom-model';
}

/** The name a custom model may be listed under; throws CustomModelError otherwise. */
export function checkCustomName(name: string): string {
  if (!NAME_RE.test(name))
    throw new CustomModelError(`invalid model name ${JSON.stringify(name)} (letters, digits, . _ - ; at most 64)`);
  return name;
}

/** Adds an installed model to the registry, replacing a same-named one. */
export async function recordCustomModel(modelsDir: string, entry: CustomModel): Promise<void> {
  const models = (await readRegistry(modelsDir)).filter((m) => m.name !== entry.name);
  models.push(entry);
  await writeRegistry(modelsDir, models);
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
