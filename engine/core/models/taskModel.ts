/**
 * Resolves a task's model settings to the ONNX file the pipeline runs: a catalog model, an imported
 * `custom:<name>` model (only when the engine was given a custom models registry), or — for
 * service-lite-4x with `denoise` — a weight blend of realesr-general-x4v3 and its wdn twin.
 */
import path from 'node:path';
import {
  CrispError,
  CUSTOM_MODEL_PREFIX,
  DENOISE_MODEL,
  errors,
  isCustomModelName,
  type CustomModelName,
  type TaskSettings,
} from '../../contract/index.js';
import { denoiseModel } from './denoiseBlend.js';
import { resolveModel, type CustomModelEntry, type ResolvedModel } from './catalog.js';
import { listCustomModels, type CustomModelListing } from './customModels.js';
import { architectureOf, customModelName } from './modelNames.js';

/** The model that `denoise` 0 stands for (realesr-general-wdn-x4v3). */
export const DENOISE_WDN_MODEL = 'clear-boost-4x';

export interface TaskModelSources {
  /** Where catalog ONNX files are looked up (modelSearchDirs). */
  modelDirs: string[];
  /** The models directory whose custom/ registry is offered; absent = custom models are refused. */
  customModelsDir?: string;
  /** Where denoise blends are cached, one file per strength (<dataDir>/models-cache). */
  denoiseCacheDir: string;
}

export { architectureOf, customModelName };

/** The registry entry in the shape the pipeline reads (see CustomModelEntry). */
export function customModelEntry(m: CustomModelListing): ResolvedModel<CustomModelEntry> {
  return {
    entry: {
      name: customModelName(m.name),
      title: m.name,
      model: m.source,
      architecture: architectureOf(m.description),
      scale: m.scale,
      kind: 'custom',
      ...(m.window !== undefined && m.window > 1 ? { window: m.window } : {}),
    },
    path: m.path,
  };
}

/** The `custom:<name>` names currently offered (read on each call, so a fresh import is usable at once). */
export async function customModelNames(customModelsDir: string | undefined): Promise<Set<string>> {
  if (customModelsDir === undefined) return new Set();
  try {
    return new Set((await listCustomModels(customModelsDir)).map((m) => customModelName(m.name)));
  } catch {
    // A damaged registry must not stop the catalog models; `crisp models list` reports the damage.
    return new Set();
  }
}

async function resolveCustom(
  name: CustomModelName,
  customModelsDir: string | undefined,
): Promise<ResolvedModel<CustomModelEntry>> {
  const bare = name.slice(CUSTOM_MODEL_PREFIX.length);
  const found =
    customModelsDir === undefined ? undefined : (await listCustomModels(customModelsDir)).find((m) => m.name === bare);
  // Validation accepted the name, so this means the model was removed since (or the engine offers none).
  if (!found)
    throw errors.refused(
      new CrispError('unknown-model', `model '${name}' is not an imported custom model (see "crisp models list")`, {
        params: { name },
      }),
    );
  return customModelEntry(found);
}

/**
 * The model a task runs. With `build: false` it only checks that every file exists (start-task answers
 * 400 at once); the denoise blend itself is built, or taken from the cache, when the task runs.
 * Throws ModelNotInstalledError for a missing catalog file, ContractError for a missing custom model.
 */
export async function resolveTaskModel(
  settings: Pick<TaskSettings, 'model' | 'denoise'>,
  sources: TaskModelSources,
  { build = true }: { build?: boolean } = {},
): Promise<ResolvedModel> {
  if (isCustomModelName(settings.model)) return resolveCustom(settings.model, sources.customModelsDir);
  const model = resolveModel(settings.model, sources.modelDirs);
  // Strength 1 is the plain general model: no blend, and the session is shared with ordinary tasks.
  if (settings.denoise === undefined || settings.denoise === 1 || settings.model !== DENOISE_MODEL) return model;
  const wdn = resolveModel(DENOISE_WDN_MODEL, sources.modelDirs);
  if (!build) return model;
  const blended = await denoiseModel(settings.denoise, {
    generalPath: model.path,
    wdnPath: wdn.path,
    cacheDir: sources.denoiseCacheDir,
  });
  return { entry: model.entry, path: path.resolve(blended) };
}
