/**
 * Output file names from the template (`{name}_{model}_x{scale}.{ext}`) and the overwrite policy:
 * skip (keep the existing file, the item is skipped), replace, or keep both (`-2`, `-3`… like the engine's
 * batch duplicates).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { SaveImageAs, Scale } from '../../engine/contract/index.js';
import { outputBaseName } from '../../engine/tasks/outputNames.js';
import type { OverwritePolicy } from '../service/crispService.js';

export const DEFAULT_TEMPLATE = '{name}_{model}_x{scale}.{ext}';
const TOKENS = ['name', 'model', 'scale', 'ext', 'format'] as const;
// eslint-disable-next-line no-control-regex
const UNSAFE = /[<>:"/\\|?*\u0000-\u001f\u007f]/g;

/** Why a template is unusable, or undefined when it is fine. */
export function templateProblem(template: string): string | undefined {
  if (template.trim() === '') return 'the file-name template is empty';
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    if (!(TOKENS as readonly string[]).includes(m[1] ?? '')) return `unknown placeholder {${m[1]}} (use ${TOKENS.map((t) => `{${t}}`).join(', ')})`;
  }
  if (!template.includes('{name}')) return 'the template must contain {name}, or every output would get the same name';
  if (/[/\\]/.test(template)) return 'the template is a file name, not a path';
  return undefined;
}

export interface NameParts {
  inputPath: string;
  model: string;
  scale: Scale;
  format: SaveImageAs;
}

export function renderTemplate(template: string, parts: NameParts): string {
  const values: Record<string, string> = {
    name: outputBaseName(path.basename(parts.inputPath)),
    model: parts.model.replace(/^custom:/, ''),
    scale: String(parts.scale),
    ext: parts.format,
    format: parts.format,
  };
  let name = template.replace(/\{(\w+)\}/g, (_m, t: string) => values[t] ?? '').replace(UNSAFE, '_').trim();
  // A template without {ext} still gets the right extension: the bytes are in that format.
  if (path.extname(name).toLowerCase() !== `.${parts.format}`) name = `${name}.${parts.format}`;
  return name;
}

const exists = async (p: string) => (await stat(p).catch(() => undefined)) !== undefined;

export type OutputDecision = { action: 'write'; path: string } | { action: 'skip'; path: string };

export async function decideOutput(dir: string, fileName: string, policy: OverwritePolicy, reserved: ReadonlySet<string> = new Set()): Promise<OutputDecision> {
  const first = path.join(dir, fileName);
  const taken = async (p: string) => reserved.has(p) || (await exists(p));
  if (policy === 'replace' || !(await taken(first))) return { action: 'write', path: first };
  if (policy === 'skip') return { action: 'skip', path: first };
  const ext = path.extname(fileName);
  const stem = fileName.slice(0, fileName.length - ext.length);
  for (let n = 2; ; n++) {
    const p = path.join(dir, `${stem}-${n}${ext}`);
    if (!(await taken(p))) return { action: 'write', path: p };
  }
}
