/**
 * Issue 38: no import circle anywhere in engine/ and app/. A circle makes load order decide what a module sees
 * (a class still undefined when another module's top level runs) and means two files cannot be read, moved or
 * tested apart. This follows every relative import through the TypeScript sources — static imports, re-exports
 * and import() alike, type-only ones included (a type circle is still two files that need each other) — and
 * fails on any strongly connected set of files, naming one circle in it.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

const SOURCE = /\.(ts|tsx|mts|mjs)$/;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...sourceFiles(p));
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Every module specifier a file names: import/export … from, import(), import x = require(). */
function specifiers(file: string): string[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
      out.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    )
      out.push(node.arguments[0].text);
    else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    )
      out.push(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The file a relative specifier names ('./x.js' is ./x.ts, as tsx and the bundler resolve it), or null. */
function resolve(from: string, spec: string): string | null {
  const base = path.resolve(path.dirname(from), spec);
  const stem = base.replace(/\.(js|mjs|ts|tsx)$/, '');
  for (const f of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.mjs`, path.join(base, 'index.ts')]) {
    try {
      if (statSync(f).isFile()) return f;
    } catch {
      // not this one
    }
  }
  return null;
}

/** The import graph of every source file under `dirs` (relative imports only; packages are leaves). */
function importGraph(root: string, dirs: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const dir of dirs) {
    for (const file of sourceFiles(path.join(root, dir))) {
      const to = specifiers(file)
        .filter((s) => s.startsWith('.'))
        .map((s) => resolve(file, s))
        .filter((f): f is string => f !== null);
      graph.set(path.relative(root, file), [...new Set(to.map((f) => path.relative(root, f)))]);
    }
  }
  return graph;
}

/** One circle per strongly connected set of files (Tarjan), each written a → b → … → a. */
function importCircles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  // Name one concrete circle inside each component: a breadth-first path from its first file back to itself.
  return components.map((component) => {
    const inside = new Set(component);
    const start = [...component].sort()[0]!;
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of graph.get(v) ?? []) {
        if (!inside.has(w)) continue;
        if (w === start) {
          const circle = [start];
          for (let at = v; at !== start; at = previous.get(at)!) circle.splice(1, 0, at);
          return [...circle, start];
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    return [start, start];
  });
}

describe('import circles', () => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'crisp-circles-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('none in engine/ or app/', () => {
    const graph = importGraph(REPO_ROOT, ['engine', 'app']);
    expect(graph.size).toBeGreaterThan(200);
    expect(importCircles(graph).map((c) => c.join(' → '))).toEqual([]);
  });

  it('the check finds a circle through a type-only import, a re-export and an import()', () => {
    const files: Record<string, string> = {
      'engine/a.ts': "import type { B } from './sub/b.js';\nexport type A = B;\n",
      'engine/sub/b.ts': "export { c } from '../c.js';\nexport type B = number;\n",
      'engine/c.ts': "export const c = () => import('./a.js');\n",
      'engine/leaf.ts': "import { c } from './c.js';\nexport const d = c;\n",
      'app/self.ts': "import * as me from './self.js';\nexport const x = me;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
      writeFileSync(path.join(scratch, file), text);
    }
    const circles = importCircles(importGraph(scratch, ['engine', 'app']));
    expect(circles.map((c) => c.join(' → ')).sort()).toEqual([
      'app/self.ts → app/self.ts',
      'engine/a.ts → engine/sub/b.ts → engine/c.ts → engine/a.ts',
    ]);
  });
});
