/**
 * The renderer may import only the packages of the page (React, zustand). Which files of other layers it
 * may reach is the layer rule's job (eslint.config.js, test/build/layerRule.test.ts): one list, not two.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

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
  it("imports no package but the page's own (no Node built-ins, no Electron)", async () => {
    const bad: string[] = [];
    for (const file of await sources(path.join(REPO_ROOT, 'renderer'))) {
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/g)) {
        const spec = m[1]!;
        if (!spec.startsWith('.') && !ALLOWED_PACKAGES.test(spec))
          bad.push(`${path.relative(REPO_ROOT, file)} → ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
