import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let packageRoot: string | undefined;

/**
 * Crisp's bundled resources folder (models, calibration crops): CRISP_RESOURCES_DIR when set (the desktop app
 * points it at the packaged app's resources), else `resources/` in the Crisp package's root, the nearest folder
 * above this module that holds a package.json. Found by walking up rather than by a fixed `../..` because this
 * module runs both from the sources (engine/…, at any depth) and bundled into the built CLI (out/cli/…).
 */
export function resourcesDir(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.CRISP_RESOURCES_DIR;
  if (override) return override;
  packageRoot ??= findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));
  return path.join(packageRoot, 'resources');
}

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`Crisp's package folder (with package.json) is not above ${from}.`);
  }
}
