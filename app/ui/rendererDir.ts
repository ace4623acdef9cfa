/** Where the built renderer is: CRISP_RENDERER_DIR, else out/renderer beside the sources (vite's output). */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_RENDERER_DIR = fileURLToPath(new URL('../../out/renderer', import.meta.url));

export function rendererDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CRISP_RENDERER_DIR ? path.resolve(env.CRISP_RENDERER_DIR) : DEFAULT_RENDERER_DIR;
}

export function isRendererBuilt(dir: string): boolean {
  return existsSync(path.join(dir, 'index.html'));
}
