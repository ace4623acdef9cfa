/**
 * The zod schemas derived from the one option declaration (upscaleOptions.ts): each option's stored value
 * (settings file, IPC payloads) and the text parser the CLI uses. Kept apart so the declaration itself
 * loads without zod.
 */
import { z } from 'zod';
import {
  acceptedValues,
  UPSCALE_OPTIONS,
  type OptionSpec,
  type UpscaleOptionKey,
  type UpscaleOptions,
} from './upscaleOptions.js';

function describeValue(v: unknown): string {
  const s = typeof v === 'string' ? `'${v}'` : JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The zod schema of one option's stored value (a settings file, an IPC payload). */
export function optionSchema(spec: OptionSpec): z.ZodType {
  const expect = (what: string) => ({ error: () => `must be ${what}` });
  switch (spec.kind) {
    case 'int': {
      const n = z
        .number(expect(acceptedValues(spec)))
        .int(expect(acceptedValues(spec)))
        .min(spec.min, expect(acceptedValues(spec)))
        .max(spec.max, expect(acceptedValues(spec)));
      return spec.nullable ? n.nullable() : n;
    }
    case 'number':
      return z
        .number(expect(acceptedValues(spec)))
        .min(spec.min, expect(acceptedValues(spec)))
        .max(spec.max, expect(acceptedValues(spec)));
    case 'choice':
      return z.enum(spec.choices as [string, ...string[]], expect(acceptedValues(spec)));
    case 'flag':
      return z.boolean(expect('true or false'));
    case 'text': {
      const check = spec.check;
      const t = z
        .string(expect(acceptedValues(spec)))
        .max(spec.maxLength, expect(`at most ${spec.maxLength} characters`))
        .superRefine((v, ctx) => {
          const p = check?.(v);
          if (p) ctx.addIssue({ code: 'custom', message: p });
        });
      return spec.nullable ? t.nullable() : t;
    }
  }
}

const entries = Object.entries(UPSCALE_OPTIONS) as [UpscaleOptionKey, OptionSpec][];

/** Field → schema, for z.object (settings file, patches, IPC). */
export const upscaleOptionFields = Object.fromEntries(entries.map(([k, s]) => [k, optionSchema(s)])) as {
  [K in UpscaleOptionKey]: z.ZodType<UpscaleOptions[K]>;
};

/**
 * Reads one upscale option from text (a CLI flag, a form field): numbers parsed, choices matched with their
 * aliases, then checked against the declared range. Answers the value or a sentence saying what is accepted.
 */
export function parseOptionText(
  key: UpscaleOptionKey,
  raw: string | boolean,
): { ok: true; value: unknown } | { ok: false; problem: string; fromCheck: boolean } {
  return parseSpecText(UPSCALE_OPTIONS[key], raw);
}

/** parseOptionText for any option declared with the same kinds (the flags of `crisp serve` and `crisp worker`). */
export function parseSpecText(
  spec: OptionSpec,
  raw: string | boolean,
): { ok: true; value: unknown } | { ok: false; problem: string; fromCheck: boolean } {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    const t = raw.trim();
    if (spec.kind === 'int') value = /^-?\d+$/.test(t) ? Number(t) : raw;
    else if (spec.kind === 'number') value = /^-?(\d+\.?\d*|\.\d+)$/.test(t) ? Number(t) : raw;
    else if (spec.kind === 'choice') value = spec.aliases?.[t.toLowerCase()] ?? t.toLowerCase();
    else if (spec.kind === 'flag') value = t === 'true' || t === '1' ? true : t === 'false' || t === '0' ? false : raw;
  }
  const r = optionSchema(spec).safeParse(value);
  if (r.success) return { ok: true, value: r.data };
  const custom = r.error.issues.find((i) => i.code === 'custom');
  return custom
    ? { ok: false, problem: custom.message, fromCheck: true }
    : { ok: false, problem: `must be ${acceptedValues(spec)}, not ${describeValue(raw)}`, fromCheck: false };
}
