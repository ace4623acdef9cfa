/**
 * What a model name the person typed stands for. Catalog (contract) names win; an imported model answers
 * to `custom:<name>` always and to its bare `<name>` when no catalog model has that name. Anything else
 * is refused with "did you mean …" suggestions (edit distance over catalog and imported names). The CLI,
 * the settings and the engine (and so `crisp serve`'s 400 message) all resolve through here.
 */
import {
  CUSTOM_MODEL_PREFIX,
  isCustomModelName,
  MODEL_NAMES,
  type CustomModelName,
  type TaskModelName,
} from '../../contract/enums.js';
import { hasErrorCode } from '../../contract/errorCatalog.js';
import { errors } from '../../contract/errors.js';

export function customModelName(name: string): CustomModelName {
  return `${CUSTOM_MODEL_PREFIX}${name}`;
}

/** "SRVGGNetCompact x4 (64 feat, …)" → "SRVGGNetCompact"; "ONNX (12 nodes, opset 17)" → "ONNX". */
export function architectureOf(description: string): string {
  return description.split(/ x\d+\b| \(/)[0]?.trim() || description;
}

export type ModelNameResolution = { ok: true; name: TaskModelName } | { ok: false; message: string };

/** Levenshtein distance with adjacent transpositions (optimal string alignment), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...new Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) d[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[s.length]![t.length]!;
}

/** Up to `max` candidates close to `input` (at most a third of its length off, at least 2), closest first. */
export function closestNames(input: string, candidates: readonly string[], max = 3): string[] {
  const limit = Math.max(2, Math.floor(input.length / 3));
  return candidates
    .map((c) => ({
      c,
      d: Math.min(
        editDistance(input, c),
        c.startsWith(CUSTOM_MODEL_PREFIX) ? editDistance(input, c.slice(CUSTOM_MODEL_PREFIX.length)) : Infinity,
      ),
    }))
    .filter((x) => x.d <= limit || (x.c.toLowerCase().includes(input.toLowerCase()) && input.length >= 3))
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
    .slice(0, max)
    .map((x) => x.c);
}

export function didYouMean(input: string, candidates: readonly string[]): string {
  const close = closestNames(input, candidates);
  if (close.length === 0) return '';
  return ` Did you mean ${close.map((c) => `'${c}'`).join(' or ')}?`;
}

export interface ModelNameOptions {
  /** Bare names of the imported models on offer (local mode); absent or empty: only catalog names exist. */
  customNames?: ReadonlySet<string> | readonly string[];
  /** The catalog names on offer (default: the contract's 12). */
  catalogNames?: readonly string[];
}

export function resolveModelName(input: string, options: ModelNameOptions = {}): ModelNameResolution {
  const catalog = options.catalogNames ?? MODEL_NAMES;
  const custom = [...(options.customNames ?? [])];
  const value = input.trim();
  const listHint =
    custom.length > 0
      ? ' Run "crisp models list" to see every installed and imported model.'
      : ' Run "crisp models list" to see them.';
  if (value === '') return { ok: false, message: `A model name is required.${listHint}` };
  if (catalog.includes(value)) return { ok: true, name: value as TaskModelName };
  if (isCustomModelName(value)) {
    const bare = value.slice(CUSTOM_MODEL_PREFIX.length);
    if (custom.includes(bare)) return { ok: true, name: value };
    const suggestions = didYouMean(
      bare,
      custom.map((c) => `${CUSTOM_MODEL_PREFIX}${c}`),
    );
    const where =
      custom.length > 0
        ? `no imported model is called '${bare}'`
        : 'no model has been imported (crisp models import FILE --name NAME)';
    return { ok: false, message: `Unknown model '${value}': ${where}.${suggestions || listHint}` };
  }
  if (custom.includes(value)) return { ok: true, name: `${CUSTOM_MODEL_PREFIX}${value}` };
  const suggestions = didYouMean(value, [...catalog, ...custom.map((c) => `${CUSTOM_MODEL_PREFIX}${c}`)]);
  return { ok: false, message: `Unknown model '${value}'.${suggestions || listHint}` };
}

/**
 * start-task's `model` field as the engine sees it: a bare imported name becomes `custom:<name>`; an
 * unknown name is left for the contract's validation to refuse, with `suggestion` to append to its 400
 * (withModelSuggestion). `customNames` holds `custom:<name>` names (absent: the engine offers none, as in
 * `crisp serve`).
 */
export function resolveTaskModelField(
  fields: Record<string, unknown>,
  customNames: ReadonlySet<string> | undefined,
): { fields: Record<string, unknown>; suggestion: string } {
  const model = fields.model;
  if (typeof model !== 'string' || model === '') return { fields, suggestion: '' };
  const bare = [...(customNames ?? [])].map((n) => n.slice(CUSTOM_MODEL_PREFIX.length));
  const r = resolveModelName(model, { customNames: bare });
  if (r.ok) return { fields: r.name === model ? fields : { ...fields, model: r.name }, suggestion: '' };
  return {
    fields,
    suggestion: didYouMean(model.startsWith(CUSTOM_MODEL_PREFIX) ? model.slice(CUSTOM_MODEL_PREFIX.length) : model, [
      ...MODEL_NAMES,
      ...bare.map(customModelName),
    ]),
  };
}

/**
 * The contract's refusal of the request with "did you mean …" added to what it says is wrong (the suggestion of
 * resolveTaskModelField); any other failure, or none to add, as it is. Built from the refusal's detail, never
 * by parsing its sentence.
 */
export function withModelSuggestion(e: unknown, suggestion: string): unknown {
  return suggestion && hasErrorCode(e, 'bad-request') && e.params?.detail !== undefined
    ? errors.badRequest(`${e.params.detail}.${suggestion}`)
    : e;
}
