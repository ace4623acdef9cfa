#!/usr/bin/env node
/**
 * Moves engine/'s folders into its four layers, engine/{contract,core,service,server} (docs/architecture.md),
 * and rewrites every path that named them: relative imports (static, dynamic, `vi.mock` and kin,
 * `new URL(…, import.meta.url)`), relative Markdown links, and repo-rooted mentions (`engine/tasks/…`) in any
 * text file. Tracked files move with `git mv`, so their history follows them.
 *
 * Re-runnable: it works from where each file is now. A file still in an old folder is moved; a relative path
 * that no longer resolves is resolved again from the file's old place and from its own, and pointed at where
 * its target lives now. So running it after merging a branch written against the old layout (new files in old
 * folders, old imports in moved files) finishes that branch's move, and on a tree already moved it changes
 * nothing.
 *
 * Usage: node scripts/layerEngine.mjs [--root <repository>] [--no-format]
 * Exit status 1 (after doing what it could) when a path is ambiguous or no longer resolves; it lists them.
 * Plain JavaScript, like buildCli.mjs, so it runs on any checkout without a build.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const posix = path.posix;

/** Old folder → its place in a layer. */
export const FOLDER_MOVES = {
  'engine/pipeline': 'engine/core/pipeline',
  'engine/inference': 'engine/core/inference',
  'engine/faces': 'engine/core/faces',
  'engine/models': 'engine/core/models',
  'engine/accounts': 'engine/service/accounts',
  'engine/credits': 'engine/service/credits',
  'engine/tasks': 'engine/service/tasks',
  'engine/uploads': 'engine/service/uploads',
  'engine/quotas': 'engine/service/quotas',
  'engine/db': 'engine/service/db',
  'engine/storage': 'engine/service/storage',
  'engine/inputs': 'engine/service/inputs',
  'engine/security': 'engine/service/security',
};
/**
 * What stays at engine/'s top: the layers and the tsconfig. engine/convert, once core's, is a part of its own again
 * (issue 38: getting models in, over core), so the old folder of that name stays where it is.
 */
const STAYS = new Set(['contract', 'core', 'convert', 'service', 'server', 'tsconfig.json', 'README.md']);
/**
 * engine/'s own files (engine.ts, api.ts, limits.ts, each deployment's composition…) are the service's, except
 * these (by name without extension): the version, which core's provenance record writes.
 */
const FILE_LAYER = { version: 'core' };

/** This script and its test name the old layout on purpose. */
const OWN_FILES = new Set(['scripts/layerEngine.mjs', 'test/build/layerEngine.test.ts']);
const CODE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const TEXT = /\.(ts|tsx|mts|cts|js|mjs|cjs|json|md|yml|yaml|html|css|py|sh|txt)$/;
const SKIP_TEXT = new Set(['package-lock.json']);

const layerOfFile = (name) => FILE_LAYER[name.replace(/\.[^.]+$/, '')] ?? 'service';

/** Where a repo-relative path (file, folder, or a spec's target) lives after the move; unchanged if it did not move. */
export function newPlace(p) {
  for (const [from, to] of Object.entries(FOLDER_MOVES)) {
    if (p === from || p.startsWith(`${from}/`)) return to + p.slice(from.length);
  }
  const top = /^engine\/([^/]+\.[A-Za-z]+)$/.exec(p);
  if (top && !STAYS.has(top[1])) return `engine/${layerOfFile(top[1])}/${top[1]}`;
  return p;
}

/** Where a file now in a layer lived before the move (the inverse of newPlace); unchanged if it did not move. */
export function oldPlace(p) {
  for (const [from, to] of Object.entries(FOLDER_MOVES)) {
    if (p.startsWith(`${to}/`)) return from + p.slice(to.length);
  }
  const top = /^engine\/(core|service)\/([^/]+\.[A-Za-z]+)$/.exec(p);
  if (top && !STAYS.has(top[2]) && layerOfFile(top[2]) === top[1]) return `engine/${top[2]}`;
  return p;
}

function git(root, args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
}

/** Tracked files and untracked ones git does not ignore, repo-relative with forward slashes. */
function listFiles(root) {
  return git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard'])
    .split('\0')
    .filter((f) => f && existsSync(path.join(root, f)));
}

/** Moves every file out of the old folders and engine/'s top level; returns [from, to] pairs. */
function moveFiles(root, problems) {
  const tracked = new Set(git(root, ['ls-files', '-z']).split('\0'));
  const moves = [];
  for (const file of listFiles(root)) {
    if (!file.startsWith('engine/')) continue;
    const to = newPlace(file);
    if (to !== file) moves.push([file, to]);
  }
  for (const [from, to] of moves) {
    if (existsSync(path.join(root, to))) {
      problems.push(`${from}: not moved, ${to} exists already`);
      continue;
    }
    mkdirSync(path.dirname(path.join(root, to)), { recursive: true });
    if (tracked.has(from)) git(root, ['mv', from, to]);
    else renameSync(path.join(root, from), path.join(root, to));
  }
  for (const dir of Object.keys(FOLDER_MOVES)) removeEmptyDirs(path.join(root, dir));
  const engineDir = path.join(root, 'engine');
  const left = existsSync(engineDir) ? readdirSync(engineDir).filter((name) => !STAYS.has(name)) : [];
  for (const name of left) {
    if (statSync(path.join(engineDir, name)).isDirectory())
      problems.push(`engine/${name}/ belongs to no layer: add it to FOLDER_MOVES in scripts/layerEngine.mjs`);
  }
  return moves.filter(([, to]) => existsSync(path.join(root, to)));
}

function removeEmptyDirs(dir) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return;
  for (const name of readdirSync(dir)) removeEmptyDirs(path.join(dir, name));
  if (readdirSync(dir).length === 0) rmdirSync(dir);
}

/** Every file and every folder above one, to tell whether a path resolves. */
function existingPaths(files) {
  const all = new Set();
  for (const f of files) {
    all.add(f);
    for (let d = posix.dirname(f); d !== '.' && !all.has(d); d = posix.dirname(d)) all.add(d);
  }
  return all;
}

/** Whether a spec's target exists, as TypeScript's bundler resolution finds it (`x.js` may be `x.ts`). */
function resolves(p, all) {
  if (all.has(p)) return true;
  const stem = p.replace(/\.(js|mjs|cjs|jsx)$/, '');
  if (stem !== p) {
    const ts = { '.js': ['.ts', '.tsx'], '.mjs': ['.mts'], '.cjs': ['.cts'], '.jsx': ['.tsx'] }[p.slice(stem.length)];
    return ts.some((ext) => all.has(stem + ext));
  }
  return ['.ts', '.tsx', '/index.ts'].some((ext) => all.has(p + ext));
}

/** A relative path from `dir` to `target`, in the style of the original spec. */
function relativeSpec(dir, target, original, dotted) {
  let rel = posix.relative(dir, target) || '.';
  if (dotted && !rel.startsWith('.')) rel = `./${rel}`;
  if (original.endsWith('/') && !rel.endsWith('/')) rel += '/';
  return rel;
}

/**
 * The spec as it should read from the file's place now. `dotted`: code specs must start with ./ or ../;
 * Markdown links keep whichever form they had.
 */
function fixSpec(spec, fileNow, all, problems, dotted) {
  const dirNow = posix.dirname(fileNow);
  const fileThen = oldPlace(fileNow);
  const bare = spec.replace(/\/+$/, '') || '.';
  const now = posix.join(dirNow, bare);
  if (now.startsWith('../') || now === '..') return spec; // outside the repository: not ours
  const nowOk = resolves(now, all);
  const then = fileThen !== fileNow ? newPlace(posix.join(posix.dirname(fileThen), bare)) : undefined;
  const thenOk = then !== undefined && resolves(then, all);
  const keep = dotted || spec.startsWith('.');
  if (nowOk && (!thenOk || then === now)) return spec;
  if (nowOk && thenOk) {
    problems.push(`${fileNow}: '${spec}' is ambiguous (${now} or ${then}); left as it is`);
    return spec;
  }
  if (thenOk) return relativeSpec(dirNow, then, spec, keep);
  const moved = newPlace(now);
  if (moved !== now && resolves(moved, all)) return relativeSpec(dirNow, moved, spec, keep);
  if (now.startsWith('engine/') || then?.startsWith('engine/')) problems.push(`${fileNow}: '${spec}' does not resolve`);
  return spec;
}

const CODE_SPECS = [
  // import … from '…', export … from '…', import '…'
  /(\bfrom\s*|\bimport\s*)(['"])(\.\.?\/[^'"\n]*)\2/g,
  // import('…'), require('…'), vi.mock('…') and its kin
  /(\b(?:import|require|vi\.(?:mock|doMock|unmock|doUnmock|importActual|importMock))\s*\(\s*)(['"])(\.\.?\/[^'"\n]*)\2/g,
  // new URL('…', import.meta.url)
  /(\bnew\s+URL\s*\(\s*)(['"])(\.\.?\/[^'"\n]*)\2(?=\s*,\s*import\.meta\.url)/g,
];
/** [text](target#anchor) where target is a relative path (no scheme, not an anchor, not rooted). */
const MD_LINK = /(\]\()(?![a-z][a-z0-9+.-]*:|#|\/)([^)\s#]+)((?:#[^)\s]*)?\))/gi;
/**
 * A repo-rooted mention of engine/'s first level: `engine/tasks`, `../../engine/engine.js`, but not
 * `test/engine/…` or `myengine/`.
 */
const MENTION = /(?<![\w.-])(?<![\w-]\/)engine\/([\w.-]*[\w-])/g;

function rewrite(file, text, all, problems) {
  let out = text;
  if (CODE.test(file)) {
    for (const re of CODE_SPECS)
      out = out.replace(re, (m, lead, q, spec) => `${lead}${q}${fixSpec(spec, file, all, problems, true)}${q}`);
  }
  if (file.endsWith('.md')) {
    out = out.replace(
      MD_LINK,
      (m, lead, target, tail) => `${lead}${fixSpec(target, file, all, problems, false)}${tail}`,
    );
  }
  return out.replace(MENTION, (m, first) => {
    const moved = newPlace(`engine/${first}`);
    // A top-level file moves by its extension; a bare word after engine/ ("engine/app") is not a path.
    return moved === `engine/${first}` ? m : moved;
  });
}

export function layerEngine(root, { format = true, log = console.log } = {}) {
  const problems = [];
  const moves = moveFiles(root, problems);
  const files = listFiles(root);
  const all = existingPaths(files);
  const changed = [];
  for (const file of files) {
    if (OWN_FILES.has(file) || SKIP_TEXT.has(path.basename(file)) || !TEXT.test(file)) continue;
    const full = path.join(root, file);
    const text = readFileSync(full, 'utf8');
    const out = rewrite(file, text, all, problems);
    if (out !== text) {
      writeFileSync(full, out);
      changed.push(file);
    }
  }
  const prettier = path.join(root, 'node_modules/.bin/prettier');
  const formattable = changed.filter((f) => CODE.test(f) || f.endsWith('.json'));
  if (format && formattable.length > 0 && existsSync(prettier)) {
    // Longer paths can push an import past the print width; .prettierignore still applies to named files.
    execFileSync(prettier, ['--write', '--log-level', 'warn', ...formattable], { cwd: root, stdio: 'inherit' });
  }
  log(`files moved: ${moves.length}; files with paths rewritten: ${changed.length}`);
  for (const p of problems) log(`problem: ${p}`);
  return { moves, changed, problems };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--root');
  const root =
    at >= 0 ? path.resolve(args[at + 1] ?? '.') : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const { problems } = layerEngine(root, { format: !args.includes('--no-format') });
  process.exitCode = problems.length > 0 ? 1 : 0;
}
