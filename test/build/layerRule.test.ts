/**
 * The layer rule (scripts/checkLayers.ts, run by `npm run lint` inside `npm test`): a wrong-way import in a
 * temporary tree fails with a message naming the file and line; the same tree without it passes; and the
 * real tree passes. Each test builds its own tree, so none depends on another's order.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkLayers } from '../../scripts/checkLayers.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const made: string[] = [];

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'crisp-layers-'));
  made.push(root);
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  }
  return root;
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const BASE = {
  'app/jobs/queue.ts': "import { run } from '../../engine/pipeline/run.js';\nexport const q = run;\n",
  'engine/pipeline/run.ts': "import path from 'node:path';\nexport const run = path.join;\n",
  'renderer/src/App.tsx': "import type { CrispService } from '../../app/service/crispService.js';\nexport type S = CrispService;\n",
  'app/service/crispService.ts': 'export interface CrispService { x: number }\n',
};

describe('the layer rule', () => {
  it('passes a tree whose imports all go down the layers', async () => {
    expect(await checkLayers(await tree(BASE))).toEqual([]);
  });

  it('fails an engine → app import, naming the file and the line', async () => {
    const root = await tree({
      ...BASE,
      'engine/tasks/bad.ts': "// engine code\nimport {\n  q,\n} from '../../app/jobs/queue.js';\nexport const x = q;\n",
    });
    const v = await checkLayers(root);
    expect(v.map((x) => x.message)).toEqual([
      "engine/tasks/bad.ts:2: engine/ must not import app/ ('../../app/jobs/queue.js'); app/ sits above engine/ (layer rule: see README \"Architecture\")",
    ]);
  });

  it('fails app → electron, engine → electron package, dynamic imports and re-exports', async () => {
    const root = await tree({
      ...BASE,
      'app/ui/win.ts': "export { w } from '../../electron/main/window.js';\n",
      'engine/server/x.ts': "import { app } from 'electron';\nexport const y = app;\n",
      'engine/models/lazy.ts': "export const z = () => import('../../renderer/src/App.js');\n",
    });
    const files = (await checkLayers(root)).map((x) => `${x.file}:${x.line} ${x.specifier}`);
    expect(files.sort()).toEqual([
      'app/ui/win.ts:1 ../../electron/main/window.js',
      'engine/models/lazy.ts:1 ../../renderer/src/App.js',
      'engine/server/x.ts:1 electron',
    ]);
  });

  it('lets the renderer see only the service interface, the preload API and the contract enums', async () => {
    const root = await tree({
      ...BASE,
      'renderer/src/bad.ts': "import { createService } from '../../app/service/createService.js';\nimport fs from 'node:fs';\nexport const b = [createService, fs];\n",
    });
    const v = await checkLayers(root);
    expect(v.map((x) => `${x.file}:${x.line}`)).toEqual(['renderer/src/bad.ts:1', 'renderer/src/bad.ts:2']);
    expect(v[0]?.message).toContain('only through window.crisp');
  });

  it('the real tree keeps the rule', async () => {
    expect((await checkLayers(REPO)).map((x) => x.message)).toEqual([]);
  });
});
