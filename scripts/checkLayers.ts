/**
 * The layer rule, checked on every source file (`npm run lint`, part of `npm test`):
 *   engine/   → may not import app/, electron/, renderer/, nor the electron or react packages;
 *   app/      → may not import electron/, renderer/, nor the electron or react packages;
 *   renderer/ → reaches the main side only through the typed preload API and the pure service interface
 *               (an allow-list below), never Node built-ins or the electron package.
 * Per-folder tsconfigs cannot say this alone (app's and test's include engine/, and TypeScript follows any
 * relative import), so this small scanner does — no dependency, one pass over the files, messages that name
 * the file, the line and the rule.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

type Layer = 'engine' | 'app' | 'electron' | 'renderer';

interface Rule {
  /** Top folders this layer must not reach by a relative import. */
  forbiddenLayers: Layer[];
  /** Packages (and their subpaths) this layer must not import. */
  forbiddenPackages: RegExp;
  /** Files of a forbidden layer this layer may still import (repository-relative, .ts). */
  allowed?: string[];
}

const UI_PACKAGES = /^(electron|react|react-dom)(\/|$)/;

export const LAYER_RULES: Record<Layer, Rule | undefined> = {
  engine: { forbiddenLayers: ['app', 'electron', 'renderer'], forbiddenPackages: UI_PACKAGES },
  app: { forbiddenLayers: ['electron', 'renderer'], forbiddenPackages: UI_PACKAGES },
  electron: undefined,
  renderer: {
    forbiddenLayers: ['engine', 'app', 'electron'],
    forbiddenPackages: /^(electron(\/|$)|node:|fs$|path$|child_process$|onnxruntime-node|sharp$)/,
    // The page sees types of the service interface and the preload object, and the contract's constants.
    allowed: ['app/service/crispService.ts', 'electron/preload/desktopApi.ts', 'engine/contract/enums.ts'],
  },
};

export interface LayerViolation {
  file: string;
  line: number;
  specifier: string;
  message: string;
}

const SOURCE = /\.(ts|tsx|mts|cts)$/;
// Static imports, re-exports and dynamic imports with a literal specifier.
const IMPORT = /(?:\bimport\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?|\bexport\s+(?:type\s+)?[\w*{}\s,$]+\s+from\s+|\bimport\s*\(\s*)['"]([^'"]+)['"]/g;

async function sourceFiles(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sourceFiles(p)));
    else if (SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

function layerOf(rel: string): Layer | undefined {
  const top = rel.split('/')[0];
  return top === 'engine' || top === 'app' || top === 'electron' || top === 'renderer' ? top : undefined;
}

/** Checks every source file under root's layer folders; returns what breaks the rule, in file order. */
export async function checkLayers(root: string): Promise<LayerViolation[]> {
  const violations: LayerViolation[] = [];
  for (const layer of Object.keys(LAYER_RULES) as Layer[]) {
    const rule = LAYER_RULES[layer];
    if (!rule) continue;
    for (const file of (await sourceFiles(path.join(root, layer))).sort()) {
      const relFile = path.relative(root, file).split(path.sep).join('/');
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const specifier = m[1] ?? '';
        const line = text.slice(0, m.index).split('\n').length;
        const at = `${relFile}:${line}`;
        if (!specifier.startsWith('.')) {
          if (rule.forbiddenPackages.test(specifier)) {
            violations.push({ file: relFile, line, specifier, message: `${at}: ${layer}/ must not import '${specifier}' (layer rule: see README "Architecture")` });
          }
          continue;
        }
        const target = path.relative(root, path.resolve(path.dirname(file), specifier)).split(path.sep).join('/');
        const targetLayer = layerOf(target);
        if (!targetLayer || !rule.forbiddenLayers.includes(targetLayer)) continue;
        const targetTs = target.replace(/\.(m|c)?js$/, '.ts');
        if (rule.allowed?.includes(targetTs)) continue;
        violations.push({
          file: relFile,
          line,
          specifier,
          message: `${at}: ${layer}/ must not import ${targetLayer}/ ('${specifier}'); ${
            layer === 'renderer' ? 'the page reaches the main side only through window.crisp (electron/preload)' : `${targetLayer}/ sits above ${layer}/`
          } (layer rule: see README "Architecture")`,
        });
      }
    }
  }
  return violations;
}

async function main(): Promise<void> {
  const root = process.argv[2] ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const violations = await checkLayers(root);
  for (const v of violations) console.error(v.message);
  if (violations.length > 0) {
    console.error(`${violations.length} import(s) break the layer rule.`);
    process.exitCode = 1;
  } else {
    console.log('layer rule: ok');
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
