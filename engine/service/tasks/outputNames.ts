/**
 * The one output namer, shared by the engine (task outputs), the app's job queue and the CLI, so the same
 * input with the same options gets the same name everywhere: `photo_service-lite-4x-dn0.5_x4.png`.
 * Names come from a template (`{name}`, `{model}`, `{scale}`, `{ext}`); the default one is used by the
 * engine. Pure string work (no node:path), so the option declaration that checks templates can be
 * type-checked by the renderer too.
 */
import type { SaveImageAs, Scale } from '../../contract/enums.js';
import type { Size, SizeRequest } from '../../contract/geometry.js';

export const DEFAULT_TEMPLATE = '{name}_{model}_x{scale}.{ext}';
/**
 * Longest output name in UTF-8 bytes. File systems stop at 255 bytes, and the name travels percent-encoded
 * in download links (up to 3 characters a byte: the server's router limit follows from this). Longer names
 * keep their extension and settings suffix; the input's stem is shortened.
 */
export const MAX_OUTPUT_NAME_BYTES = 200;
export const TEMPLATE_TOKENS = ['name', 'model', 'scale', 'ext', 'format'] as const;

/** Characters Windows, macOS or Linux refuse in a file name, plus control characters. */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[<>:"/\\|?*\u0000-\u001f\u007f]/g;

/** What a name is made of: the options that change the pixels are all in it. */
export interface NameParts {
  /** The input's file name (a path is reduced to its last segment). */
  originalFileName: string;
  model: string;
  scale: Scale;
  format: SaveImageAs;
  denoise?: number | undefined;
  /** Face enhancement (core's FaceJob); a null or empty model: the engine's default face model. */
  face?: { model: string | null; strength?: number | undefined } | undefined;
  /** Double upscale: `{scale}` is the total (×4 twice names as x16), so the name says what the file is. */
  passes?: number | undefined;
  /**
   * An exact size instead of a scale: `x{scale}` in the template names the size instead — the output's
   * `<width>x<height>` when the input's size is known (`photo_digital-art-4x_1000x667.png`), else the request
   * (`w1000`, `h800`, `fit1920x1080`, `long2000`).
   */
  size?: { request: SizeRequest; output?: Size | undefined } | undefined;
}

/** The size part of a name (see NameParts.size). */
export function sizeLabel(size: NonNullable<NameParts['size']>): string {
  if (size.output) return `${size.output.width}x${size.output.height}`;
  const r = size.request;
  if (r.longSide !== undefined) return `long${r.longSide}`;
  if (r.width !== undefined && r.height !== undefined) return `fit${r.width}x${r.height}`;
  return r.width !== undefined ? `w${r.width}` : `h${r.height ?? ''}`;
}

function lastSegment(p: string): string {
  return p.split(/[\\/]/).pop() ?? '';
}

/** `My Photo.final.jpg` → `My Photo.final`; hidden or empty names get an `image` stem. */
export function outputBaseName(originalFileName: string): string {
  const file = lastSegment(originalFileName);
  const dot = file.lastIndexOf('.');
  const stem = dot > 0 ? file.slice(0, dot) : file;
  const base = stem.replace(UNSAFE, '_').trim();
  return (base === '' || base.startsWith('.') ? `image${base}` : base).slice(0, 150);
}

/**
 * The `{model}` part: `custom:anime` → `custom-anime` (':' is not allowed in Windows file names). Options
 * that change the result join it, so two runs that differ in them never overwrite each other: a denoise
 * strength (`-dn0.5`), face enhancement (`-face`, the face model `-face-gfpgan-1.4`, a strength below
 * 1 `-fs0.7`).
 */
export function outputModelLabel(parts: Omit<NameParts, 'originalFileName' | 'scale' | 'format'>): string {
  let label = parts.model.replace(UNSAFE, '-');
  // Strength 1 is the plain model (the same pixels), so it names like no denoise at all.
  if (parts.denoise !== undefined && parts.denoise !== 1) label += `-dn${parts.denoise}`;
  if (parts.face) {
    label += parts.face.model ? `-face-${parts.face.model.replace(UNSAFE, '-')}` : '-face';
    if (parts.face.strength !== undefined && parts.face.strength !== 1) label += `-fs${parts.face.strength}`;
  }
  return label;
}

/** Why a template is unusable, or undefined when it is fine. */
export function templateProblem(template: string): string | undefined {
  if (template.trim() === '') return 'the file-name template is empty';
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    if (!(TEMPLATE_TOKENS as readonly string[]).includes(m[1] ?? '')) {
      return `unknown placeholder {${m[1]}} (use ${TEMPLATE_TOKENS.map((t) => `{${t}}`).join(', ')})`;
    }
  }
  if (!template.includes('{name}')) return 'the template must contain {name}, or every output would get the same name';
  if (/[/\\]/.test(template)) return 'the template is a file name, not a path';
  return undefined;
}

const utf8 = new TextEncoder();
const byteLength = (s: string) => utf8.encode(s).length;

/** The longest prefix of `s` (whole code points) that fits `maxBytes` of UTF-8. */
function truncateUtf8(s: string, maxBytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of s) {
    used += byteLength(ch);
    if (used > maxBytes) break;
    out += ch;
  }
  return out;
}

export function renderOutputName(template: string, parts: NameParts): string {
  const full = renderWith(template, parts, outputBaseName(parts.originalFileName));
  const excess = byteLength(full) - MAX_OUTPUT_NAME_BYTES;
  if (excess <= 0) return full;
  const stem = outputBaseName(parts.originalFileName);
  const kept = truncateUtf8(stem, Math.max(1, byteLength(stem) - excess)).trim();
  return renderWith(template, parts, kept === '' ? 'image' : kept);
}

function renderWith(template: string, parts: NameParts, stem: string): string {
  const values: Record<string, string> = {
    name: stem,
    model: outputModelLabel(parts),
    scale: String(parts.scale ** (parts.passes ?? 1)),
    ext: parts.format,
    format: parts.format,
  };
  // With an exact size the factor part of a name ("x{scale}") names the size: the scale is not what was asked.
  const geometry = parts.size ? template.replace(/x\{scale\}/g, sizeLabel(parts.size)) : template;
  let name = geometry
    .replace(/\{(\w+)\}/g, (_m, t: string) => values[t] ?? '')
    .replace(UNSAFE, '_')
    .trim();
  // A template without {ext} still gets the right extension: the bytes are in that format.
  if (!name.toLowerCase().endsWith(`.${parts.format}`)) name = `${name}.${parts.format}`;
  return name;
}

/** `stem.ext` → `stem-2.ext`, `stem-3.ext`…: the n-th name for a duplicate. */
export function numberedName(fileName: string, n: number): string {
  const dot = fileName.lastIndexOf('.');
  return dot > 0 ? `${fileName.slice(0, dot)}-${n}${fileName.slice(dot)}` : `${fileName}-${n}`;
}

/** The engine's task outputs: the default template; a batch's duplicates get `-2`, `-3`. */
export function outputFileName(
  originalFileName: string,
  settings: {
    model: string;
    scale: Scale;
    saveImageAs: SaveImageAs;
    denoise?: number;
    face?: NameParts['face'];
    passes?: number;
  },
  taken: ReadonlySet<string>,
): string {
  const first = renderOutputName(DEFAULT_TEMPLATE, { ...settings, originalFileName, format: settings.saveImageAs });
  let name = first;
  for (let n = 2; taken.has(name); n++) name = numberedName(first, n);
  return name;
}
