/**
 * Where model files live — the bundled, per-user and searched folders, the custom models' folder and registry
 * name — and the catalog's model-not-installed error. Plain paths (no zod): core's public entry offers them to
 * callers that never read the catalog (catalog.ts and customModels.ts re-export them).
 */
import os from 'node:os';
import path from 'node:path';
import { CrispError } from '../../contract/errorCatalog.js';
import type { ModelName } from '../../contract/enums.js';
import { resourcesDir } from '../resourcesDir.js';

/** The catalog's model-not-installed row, with the model and where it was looked for. */
export class ModelNotInstalledError extends CrispError {
  override readonly name = 'ModelNotInstalledError';
  constructor(
    readonly model: ModelName,
    /** The catalog row's network and file (catalog.ts CatalogEntry; named here, which catalog.ts imports). */
    readonly entry: { model: string; file: string },
    readonly searched: string[],
  ) {
    const where = searched[0] ?? bundledModelsDir();
    super(
      'model-not-installed',
      `Model '${model}' (${entry.model}) is not installed. Install it with "crisp models fetch ${model}" ` +
        `or put ${entry.file} in ${where}.`,
      { params: { name: model } },
    );
  }
}

/** resources/models of the Crisp package, or of CRISP_RESOURCES_DIR (packaged apps). */
export function bundledModelsDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(resourcesDir(env), 'models');
}

/** The per-user models directory, where "crisp models fetch" installs files. */
export function userModelsDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string {
  const home = env.HOME ?? env.USERPROFILE ?? os.homedir();
  if (platform === 'win32') {
    const appData = env.APPDATA ?? path.join(home, 'AppData', 'Roaming');
    return path.join(appData, 'Crisp', 'models');
  }
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Crisp', 'models');
  const dataHome = env.XDG_DATA_HOME || path.join(home, '.local', 'share');
  return path.join(dataHome, 'crisp', 'models');
}

/** Directories searched for model files, highest priority first. */
export function modelSearchDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs: string[] = [];
  if (env.CRISP_MODELS_DIR) dirs.push(path.resolve(env.CRISP_MODELS_DIR));
  dirs.push(userModelsDir(env), bundledModelsDir(env));
  return [...new Set(dirs)];
}

/** The folder of user-imported ("custom") models inside a models folder, and their registry's file name. */
export const CUSTOM_DIR = 'custom';
export const CUSTOM_REGISTRY = 'custom-models.json';

export function customModelsDir(modelsDir: string): string {
  return path.join(modelsDir, CUSTOM_DIR);
}
