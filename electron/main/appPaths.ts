/**
 * Where the built pieces are, relative to the bundled main (out/electron/main.js), and where the
 * resources (model catalogue, bundled models) are: beside the sources in development, in
 * process.resourcesPath once packaged (electron-builder's extraResources).
 */
import path from 'node:path';

export interface AppPaths {
  preload: string;
  engineWorker: string;
  renderer: string;
  resources: string;
  icon: string;
}

export function appPaths(mainDir: string, isPackaged: boolean, resourcesPath: string): AppPaths {
  const repoRoot = path.resolve(mainDir, '../..');
  const resources = isPackaged ? resourcesPath : path.join(repoRoot, 'resources');
  return {
    preload: path.join(mainDir, 'preload.cjs'),
    engineWorker: path.join(mainDir, 'engineWorker.js'),
    renderer: path.resolve(mainDir, '../renderer'),
    resources,
    icon: path.join(resources, 'icons', 'icon.png'),
  };
}
