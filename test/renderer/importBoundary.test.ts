/**
 * The renderer may import only renderer code and four pure modules (types and the method table). tsconfig catches Node and
 * Electron imports; this catches a relative import of app/ or engine/ code that happens to compile.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

const ALLOWED_OUTSIDE = new Set(['app/service/crispService.ts', 'app/service/methodTable.ts', 'app/settings/upscaleOptions.ts', 'engine/contract/enums.ts', 'electron/preload/desktopApi.ts']);
const ALLOWED_PACKAGES = /^(react|react-dom|react\/jsx-runtime|react-dom\/client|zustand|zustand\/.+)$/;

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(p)));
    else if (/\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

describe('renderer import boundary', () => {
  it('imports nothing from Node, Electron, or the app/engine implementation', async () => {
    const bad: string[] = [];
    for (const file of await sources(path.join(REPO_ROOT, 'renderer'))) {
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/g)) {
        const spec = m[1]!;
        if (spec.startsWith('.')) {
          const target = path.relative(REPO_ROOT, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts');
          if (!target.startsWith('renderer/') && !ALLOWED_OUTSIDE.has(target)) bad.push(`${path.relative(REPO_ROOT, file)} → ${spec}`);
        } else if (!ALLOWED_PACKAGES.test(spec)) bad.push(`${path.relative(REPO_ROOT, file)} → ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
