#!/usr/bin/env node
/**
 * Lists the exports of engine/, app/, electron/ and renderer/ that no other file uses, with the TypeScript
 * compiler API (no dependency of its own): one program over every file of the seven tsconfigs (tests count as
 * users), every identifier resolved through imports and re-exports to the declaration it names. An export only
 * its own file uses is listed apart: it needs no `export`.
 *
 * Usage: node scripts/unusedExports.mjs [--local] [--json]   (--local: also the exports only their own file uses)
 * Exit status 1 when an export no file uses is left (test/build/unusedExports.test.ts keeps it at 0). Plain JavaScript, like buildCli.mjs, so it runs without a build.
 * Files other programs load by path (Vite's, electron-builder's and esbuild's entries, the worker entries) export
 * nothing others import; what a script outside the seven tsconfigs imports is not seen, so check a hit before
 * deleting it.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSCONFIGS = ['engine', 'app', 'test', 'renderer', 'electron', 'electron/preload', 'test/renderer'];
const CHECKED = ['engine/', 'app/', 'electron/', 'renderer/'];

export function unusedExports(root = ROOT) {
  const files = new Set();
  for (const dir of TSCONFIGS) {
    const parsed = ts.getParsedCommandLineOfConfigFile(
      path.join(root, dir, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    for (const f of parsed?.fileNames ?? []) files.add(path.resolve(f));
  }
  const program = ts.createProgram([...files], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    jsx: ts.JsxEmit.ReactJSX,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    resolveJsonModule: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const rel = (sf) => path.relative(root, sf.fileName).split(path.sep).join('/');
  const ours = program.getSourceFiles().filter((sf) => !sf.isDeclarationFile && !sf.fileName.includes('node_modules'));

  /** The declaration a symbol finally names, through import and re-export aliases. */
  const target = (symbol) => {
    let s = symbol;
    for (let i = 0; i < 20 && s.flags & ts.SymbolFlags.Alias; i++) {
      const next = checker.getAliasedSymbol(s);
      if (!next || next === s) break;
      s = next;
    }
    return s;
  };
  /** target symbol → files (other than its own) that name it. */
  const usedFrom = new Map();
  const use = (symbol, file) => {
    if (!symbol) return;
    const t = target(symbol);
    if (!usedFrom.has(t)) usedFrom.set(t, new Set());
    usedFrom.get(t).add(file);
  };
  for (const sf of ours) {
    const file = rel(sf);
    const visit = (node) => {
      if (ts.isIdentifier(node) || ts.isStringLiteral(node)) {
        const s = checker.getSymbolAtLocation(node);
        if (s) use(s, file);
        // `const { a } = await import('./x.js')`: the property of the module's type is the export.
        if (
          ts.isIdentifier(node) &&
          ts.isBindingElement(node.parent) &&
          ts.isObjectBindingPattern(node.parent.parent)
        ) {
          const element = node.parent;
          const name = (element.propertyName ?? element.name).getText(sf);
          const prop = checker.getTypeAtLocation(element.parent).getProperty(name);
          if (prop) use(prop, file);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }

  const unused = [];
  const localOnly = [];
  for (const sf of ours) {
    const file = rel(sf);
    if (!CHECKED.some((d) => file.startsWith(d))) continue;
    const moduleSymbol = checker.getSymbolAtLocation(sf);
    if (!moduleSymbol) continue;
    for (const exp of checker.getExportsOfModule(moduleSymbol)) {
      const t = target(exp);
      const declaredHere = (t.declarations ?? []).some((d) => d.getSourceFile() === sf);
      // A re-export (`export * from`, `export { x } from`) is judged where x is declared.
      if (!declaredHere || exp.name === 'default') continue;
      const users = usedFrom.get(t) ?? new Set();
      const others = [...users].filter((f) => f !== file);
      if (others.length > 0) continue;
      const line = sf.getLineAndCharacterOfPosition(t.declarations[0].getStart(sf)).line + 1;
      (users.has(file) && selfUses(t, sf) ? localOnly : unused).push(`${file}:${line} ${exp.name}`);
    }
  }
  return { unused: unused.sort(), localOnly: localOnly.sort() };

  /** Whether the file names the symbol anywhere but its own declaration. */
  function selfUses(symbol, sf) {
    let found = false;
    const decls = new Set((symbol.declarations ?? []).map((d) => ts.getNameOfDeclaration(d)));
    const visit = (node) => {
      if (found) return;
      if (ts.isIdentifier(node) && !decls.has(node)) {
        const s = checker.getSymbolAtLocation(node);
        if (s && target(s) === symbol) found = true;
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    return found;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { unused, localOnly } = unusedExports();
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ unused, localOnly }, null, 2)}\n`);
  } else {
    process.stdout.write(`Exports no file uses (${unused.length}):\n${unused.map((u) => `  ${u}`).join('\n')}\n`);
    // Many of these are exported on purpose (a type in a signature other files call, a constant a doc names).
    if (process.argv.includes('--local'))
      process.stdout.write(
        `Exports only their own file uses (${localOnly.length}):\n${localOnly.map((u) => `  ${u}`).join('\n')}\n`,
      );
  }
  process.exitCode = unused.length > 0 ? 1 : 0;
}
