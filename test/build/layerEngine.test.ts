/**
 * scripts/layerEngine.mjs, on a small repository in the old layout: it moves engine/'s folders into their layers,
 * rewrites every kind of path it promises to, changes nothing when run again, and finishes the move of a branch
 * written against the old layout (a new file in an old folder, an old import in a moved file).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

const SCRIPT = path.join(REPO_ROOT, 'scripts/layerEngine.mjs');

const OLD_LAYOUT: Record<string, string> = {
  'engine/contract/index.ts': 'export const C = 1;\n',
  'engine/core/index.ts': "export { P } from '../pipeline/p.js';\n",
  'engine/pipeline/p.ts': [
    "import { C } from '../contract/index.js';",
    "import { F } from '../faces/f.js';",
    "import { V } from '../version.js';",
    '// see engine/faces/f.ts',
    'export const P = C + F + V;',
    '',
  ].join('\n'),
  'engine/faces/f.ts': 'export const F = 2;\n',
  'engine/version.ts': 'export const V = 3;\n',
  'engine/models/catalog.ts': "export const DIR = new URL('../../resources/models/', import.meta.url);\n",
  'engine/engine.ts': [
    "import { P } from './core/index.js';",
    "import { T } from './tasks/t.js';",
    'export const E = P + T;',
    '',
  ].join('\n'),
  'engine/tasks/t.ts': [
    "import { C } from '../contract/index.js';",
    "export type { E } from '../engine.js';",
    'export const T = C;',
    "export const later = () => import('../pipeline/p.js');",
    '',
  ].join('\n'),
  'engine/tasks/README.md': 'Runs [the pipeline](../pipeline/p.ts#L1), see [core](../core/index.ts).\n',
  'engine/server/s.ts':
    "import { E } from '../engine.js';\nimport { T } from '../tasks/t.js';\nexport const S = E + T;\n",
  'engine/tsconfig.json': '{ "include": ["./**/*.ts"] }\n',
  'resources/models/catalog.json': '[]\n',
  'app/a.ts': [
    "import { E } from '../engine/engine.js';",
    "export const f = () => import('../engine/faces/f.js');",
    'export const A = E;',
    '',
  ].join('\n'),
  'test/x.test.ts': [
    "vi.mock('../engine/tasks/t.js', async (original) => original());",
    "const name = 'engine/tasks/t.ts';",
    "const other = 'test/engine/tasks.test.ts';",
    "const dataDir = path.join(dir, 'engine');",
    '',
  ].join('\n'),
  'docs/a.md': [
    'The queue: [tasks](../engine/tasks/README.md), `engine/tasks/t.ts` and `engine/engine.ts`.',
    'Not a path: the engine/app boundary; tests in test/engine/tasks.test.ts; settings in engine/tsconfig.json.',
    '',
  ].join('\n'),
};

let root: string;

function write(files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
}
const read = (file: string): string => readFileSync(path.join(root, file), 'utf8');
const git = (...args: string[]): string => execFileSync('git', args, { cwd: root, encoding: 'utf8' });
function layer(): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [SCRIPT, '--root', root, '--no-format'], { encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'crisp-layer-'));
  git('init', '-q');
  write(OLD_LAYOUT);
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'old layout');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

// One story on one repository — move, run again, a late branch's files, a stray folder — so its steps keep their
// order under --sequence.shuffle (each step's starting point is the previous step's result).
describe('scripts/layerEngine.mjs', { shuffle: false }, () => {
  it('moves the folders and engine/ files into their layers, with git mv', () => {
    const { status, out } = layer();
    expect(out).toContain('files moved: 7;');
    expect(status).toBe(0);
    for (const file of [
      'engine/core/pipeline/p.ts',
      'engine/core/faces/f.ts',
      'engine/core/models/catalog.ts',
      'engine/core/version.ts',
      'engine/service/engine.ts',
      'engine/service/tasks/t.ts',
      'engine/service/tasks/README.md',
      'engine/server/s.ts',
      'engine/tsconfig.json',
    ])
      expect(existsSync(path.join(root, file)), file).toBe(true);
    for (const gone of ['engine/pipeline', 'engine/faces', 'engine/tasks', 'engine/engine.ts', 'engine/version.ts'])
      expect(existsSync(path.join(root, gone)), gone).toBe(false);
    expect(git('status', '--porcelain')).toContain('R  engine/faces/f.ts -> engine/core/faces/f.ts');
  });

  it('rewrites relative imports, new URL, vi.mock, Markdown links and engine/ mentions', () => {
    expect(read('engine/core/pipeline/p.ts')).toBe(
      [
        "import { C } from '../../contract/index.js';",
        "import { F } from '../faces/f.js';",
        "import { V } from '../version.js';",
        '// see engine/core/faces/f.ts',
        'export const P = C + F + V;',
        '',
      ].join('\n'),
    );
    expect(read('engine/core/index.ts')).toBe("export { P } from './pipeline/p.js';\n");
    expect(read('engine/core/models/catalog.ts')).toBe(
      "export const DIR = new URL('../../../resources/models/', import.meta.url);\n",
    );
    expect(read('engine/service/engine.ts')).toContain("import { P } from '../core/index.js';");
    expect(read('engine/service/engine.ts')).toContain("import { T } from './tasks/t.js';");
    expect(read('engine/service/tasks/t.ts')).toBe(
      [
        "import { C } from '../../contract/index.js';",
        "export type { E } from '../engine.js';",
        'export const T = C;',
        "export const later = () => import('../../core/pipeline/p.js');",
        '',
      ].join('\n'),
    );
    expect(read('engine/service/tasks/README.md')).toBe(
      'Runs [the pipeline](../../core/pipeline/p.ts#L1), see [core](../../core/index.ts).\n',
    );
    expect(read('engine/server/s.ts')).toBe(
      "import { E } from '../service/engine.js';\nimport { T } from '../service/tasks/t.js';\nexport const S = E + T;\n",
    );
    expect(read('app/a.ts')).toContain("import { E } from '../engine/service/engine.js';");
    expect(read('app/a.ts')).toContain("import('../engine/core/faces/f.js')");
    expect(read('test/x.test.ts')).toBe(
      [
        "vi.mock('../engine/service/tasks/t.js', async (original) => original());",
        "const name = 'engine/service/tasks/t.ts';",
        "const other = 'test/engine/tasks.test.ts';",
        "const dataDir = path.join(dir, 'engine');",
        '',
      ].join('\n'),
    );
    expect(read('docs/a.md')).toBe(
      [
        'The queue: [tasks](../engine/service/tasks/README.md), `engine/service/tasks/t.ts` and `engine/service/engine.ts`.',
        'Not a path: the engine/app boundary; tests in test/engine/tasks.test.ts; settings in engine/tsconfig.json.',
        '',
      ].join('\n'),
    );
  });

  it('changes nothing when run again', () => {
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'moved');
    const { status, out } = layer();
    expect(status).toBe(0);
    expect(out).toContain('files moved: 0; files with paths rewritten: 0');
    expect(git('status', '--porcelain')).toBe('');
  });

  it("finishes a late branch's move: a new file in an old folder, old imports in moved and unmoved files", () => {
    write({
      // An untracked file a branch added in an old folder.
      'engine/uploads/u.ts': "import { T } from '../tasks/t.js';\nimport { C } from '../contract/index.js';\n",
      // A moved file that gained an import written from its old place (engine/tasks/).
      'engine/service/tasks/t.ts': `${read('engine/service/tasks/t.ts')}import { F } from '../faces/f.js';\n`,
      // An unmoved file that gained an import of an old place.
      'app/b.ts': "import { V } from '../engine/version.js';\n",
    });
    const { status, out } = layer();
    expect(status).toBe(0);
    expect(out).toContain('files moved: 1;');
    expect(read('engine/service/uploads/u.ts')).toBe(
      "import { T } from '../tasks/t.js';\nimport { C } from '../../contract/index.js';\n",
    );
    expect(read('engine/service/tasks/t.ts')).toContain("import { F } from '../../core/faces/f.js';\n");
    expect(read('app/b.ts')).toBe("import { V } from '../engine/core/version.js';\n");
    expect(existsSync(path.join(root, 'engine/uploads'))).toBe(false);
  });

  it('refuses a folder of engine/ that belongs to no layer, and says which import no longer resolves', () => {
    write({ 'engine/weird/w.ts': "import '../gone.js';\n" });
    const { status, out } = layer();
    expect(status).toBe(1);
    expect(out).toContain('engine/weird/ belongs to no layer');
    expect(out).toContain("engine/weird/w.ts: '../gone.js' does not resolve");
  });
});
