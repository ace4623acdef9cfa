/**
 * Issue 25: each engine part has one public entry, engine/<part>/index.ts, and app/ and electron/ use the engine
 * only through them (eslint.config.js, layerRule.test.ts). An entry exports its light modules as they are and its
 * heavy ones behind loaders, so importing an entry loads no heavy npm package: this follows each entry's static
 * imports through the TypeScript sources, as tsx and the tests run them (type-only imports and exports are erased;
 * with verbatimModuleSyntax an import whose names are all `type` still loads its module, so it is followed).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

/** Packages a caller must ask for: the entries hand out their modules through loaders. */
const HEAVY = ['sharp', 'onnxruntime-node', 'zod', 'fastify', '@fastify/', 'undici', 'pg', '@aws-sdk/', 'yauzl'];

function staticImports(file: string): string[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specs: string[] = [];
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st) && !st.importClause?.isTypeOnly)
      specs.push((st.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isExportDeclaration(st) && st.moduleSpecifier && !st.isTypeOnly)
      specs.push((st.moduleSpecifier as ts.StringLiteral).text);
  }
  return specs;
}

function sourceOf(from: string, spec: string): string {
  const base = path.resolve(path.dirname(from), spec);
  const found = [base.replace(/\.js$/, '.ts'), base].find((f) => existsSync(f) && statSync(f).isFile());
  if (!found) throw new Error(`${path.relative(REPO_ROOT, from)}: cannot find ${spec}`);
  return found;
}

/** Every module, npm package and Node built-in a file loads when imported. */
function graph(entry: string): { modules: string[]; packages: string[] } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const stack = [path.join(REPO_ROOT, entry)];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (modules.has(file)) continue;
    modules.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith('.')) stack.push(sourceOf(file, spec));
      else packages.add(spec);
    }
  }
  return { modules: [...modules].map((f) => path.relative(REPO_ROOT, f)), packages: [...packages] };
}

describe('engine entries', () => {
  it.each(['contract', 'core', 'convert', 'service', 'server'])('engine/%s/index.ts loads no heavy package', (part) => {
    const { packages } = graph(`engine/${part}/index.ts`);
    expect(packages.filter((p) => HEAVY.some((h) => p === h || p.startsWith(h)))).toEqual([]);
  });

  it("core's entry loads none of engine/convert, the checkpoint tool chain an upscale never needs", () => {
    const { modules } = graph('engine/core/index.ts');
    expect(modules.filter((m) => m.startsWith('engine/convert/'))).toEqual([]);
  });

  it("the service's entry loads neither its engine nor its task store (the desktop's local path never does)", () => {
    const { modules } = graph('engine/service/index.ts');
    expect(modules).not.toContain('engine/service/engine.ts');
    expect(modules).not.toContain('engine/service/tasks/taskStore.ts');
  });

  it('the option table app/ shares with the renderer (its one exception to the entries) loads no package nor Node', () => {
    // eslint.config.js lets app/settings/upscaleOptions.ts name plain-data engine modules: the entries bring Node.
    const { modules, packages } = graph('app/settings/upscaleOptions.ts');
    expect(modules.filter((m) => m.startsWith('engine/'))).toContain('engine/core/models/modelNames.ts');
    expect(packages).toEqual([]);
  });
});
