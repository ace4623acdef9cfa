/**
 * Presets: named sets of every upscale option that describes a result (model, scale, passes, format,
 * compression, denoise, face, output folder and name template, metadata policy, overwrite), derived from the
 * one option table (upscaleOptions.ts, PRESET_OPTION_KEYS): a new option becomes a preset field by being
 * declared there. Machine settings (threads, tile size, execution provider, precision) are not in presets.
 *
 * This file holds the data and its checks (zod); presetStore.ts keeps them on disk. The export file is
 * `{ "crispPresets": 1, "presets": [{ "name", "options" }] }`, validated whole on read: a file that was
 * edited into something else is refused with a sentence, and nothing of it is imported.
 */
import { z } from 'zod';
import { upscaleOptionFields } from './optionSchemas.js';
import { PRESET_OPTION_KEYS, UPSCALE_DEFAULTS, type PresetOptionKey, type UpscaleOptions } from './upscaleOptions.js';

export type PresetOptions = Pick<UpscaleOptions, PresetOptionKey>;

export interface Preset {
  name: string;
  /** Built-in presets can be chosen and exported but not renamed, changed or deleted. */
  builtIn: boolean;
  options: PresetOptions;
}

export const PRESET_NAME_MAX = 60;
export const PRESET_FILE_VERSION = 1;

export const presetNameSchema = z
  .string({ error: 'A preset name must be text.' })
  .trim()
  .min(1, { error: 'A preset name cannot be empty.' })
  .max(PRESET_NAME_MAX, { error: `A preset name has at most ${PRESET_NAME_MAX} characters.` })
  // Names appear in menus and on command lines: no control characters.
  .refine((n) => !/\p{Cc}/u.test(n), { error: 'A preset name cannot contain control characters.' });

/** Options added after presets were first saved and exported: a preset without them gets their default (none). */
const ADDED_LATER: readonly PresetOptionKey[] = ['width', 'height', 'longSide'];

const presetOptionFields = Object.fromEntries(
  PRESET_OPTION_KEYS.map((k) => [
    k,
    ADDED_LATER.includes(k)
      ? (upscaleOptionFields[k] as z.ZodType<number | null>).default(null)
      : upscaleOptionFields[k],
  ]),
) as {
  [K in PresetOptionKey]: z.ZodType<PresetOptions[K]>;
};

/** Every preset field, nothing else (a field we do not know is a sign of a tampered or foreign file). */
export const presetOptionsSchema = z.object(presetOptionFields).strict();

const presetEntrySchema = z.object({ name: presetNameSchema, options: presetOptionsSchema }).strict();

/** The export file. */
export const presetFileSchema = z
  .object({
    crispPresets: z.literal(PRESET_FILE_VERSION, { error: 'this is not a Crisp presets file (version 1)' }),
    presets: z.array(presetEntrySchema).min(1).max(200),
  })
  .strict();

export type PresetFile = z.infer<typeof presetFileSchema>;

/** The preset fields of a full option set (current settings, a job's options). */
export function presetOptionsOf(options: UpscaleOptions | PresetOptions): PresetOptions {
  return Object.fromEntries(PRESET_OPTION_KEYS.map((k) => [k, options[k]])) as PresetOptions;
}

const base = presetOptionsOf(UPSCALE_DEFAULTS);

/**
 * Shipped with the app: for photos, for illustrations, and lossless ×2 for print. Each uses a model the app
 * bundles (resources/models/bundled.json), so every built-in preset runs on a fresh install with no network.
 */
export const BUILT_IN_PRESETS: readonly Preset[] = [
  {
    name: 'Photos',
    builtIn: true,
    options: { ...base, model: 'service-lite-4x', scale: 4, format: 'jpg', compression: 5, metadata: 'keep' },
  },
  {
    name: 'Illustrations',
    builtIn: true,
    options: { ...base, model: 'digital-art-4x', scale: 4, format: 'png', compression: 30, metadata: 'keep' },
  },
  {
    name: 'Print ×2 lossless',
    builtIn: true,
    options: { ...base, model: 'service-lite-4x', scale: 2, format: 'png', compression: 0, metadata: 'keep' },
  },
];

/** The preset `crisp FILE…` and a first start use until another is chosen. */
export const DEFAULT_PRESET_NAME = 'Photos';

/** Names compare without case and surrounding spaces: "photos" and "Photos " are the same preset. */
export function sameName(a: string, b: string): boolean {
  return a.trim().toLocaleLowerCase() === b.trim().toLocaleLowerCase();
}

/** The first issue of a zod error as a sentence naming where it is ("presets[1].options.scale: …"). */
export function zodSentence(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const where = issue.path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
  const keys = 'keys' in issue ? ` (${(issue as { keys: string[] }).keys.join(', ')})` : '';
  return `${where ? `${where}: ` : ''}${issue.message}${keys}`;
}
