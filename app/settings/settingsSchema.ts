/**
 * The settings file's schema (zod), version 1: the app's own fields (mode, service URL, theme, language) plus every
 * upscale option from the one declaration in upscaleOptions.ts. `Settings` is derived from it. Fields
 * added later within version 1 (`denoise`, `faceModel`, `faceStrength`, `precision`, `language`) are migrated by the
 * store's salvage step: a file without them gets their defaults.
 */
import { z } from 'zod';
import { upscaleOptionFields } from './optionSchemas.js';
import { UPSCALE_DEFAULTS, type UpscaleOptions } from './upscaleOptions.js';

export const SETTINGS_VERSION = 1;

export const MODES = ['local', 'cloud'] as const;
export type Mode = (typeof MODES)[number];
export const THEMES = ['system', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];
/** The interface language: `system` follows the OS/browser languages; the renderer has a catalog for each other value. */
export const LANGUAGES = ['system', 'en', 'de'] as const;
export type Language = (typeof LANGUAGES)[number];

const baseUrl = z
  .string()
  .max(4096)
  .refine(
    (u) => {
      if (u === '') return true;
      try {
        const p = new URL(u).protocol;
        return p === 'http:' || p === 'https:';
      } catch {
        return false;
      }
    },
    { message: 'must be an http(s) URL' },
  );

/** The app's own settings; everything about an upscale comes from UPSCALE_OPTIONS. */
const appFields = {
  mode: z.enum(MODES),
  /** Cloud: base URL of the upscaling service (the official one or a `crisp serve`). */
  baseUrl,
  theme: z.enum(THEMES),
  language: z.enum(LANGUAGES),
};

export type Settings = {
  version: typeof SETTINGS_VERSION;
  mode: Mode;
  baseUrl: string;
  theme: Theme;
  language: Language;
} & UpscaleOptions;

export const settingsFields = { ...appFields, ...upscaleOptionFields };

export const settingsSchema = z.object({ version: z.literal(SETTINGS_VERSION), ...settingsFields });
/** A change from the UI: any subset of the fields, nothing else (IPC, `crisp ui`'s bridge and the store check it). */
export const settingsPatchSchema = z.object(settingsFields).partial().strict();

export const DEFAULT_SETTINGS: Settings = {
  version: SETTINGS_VERSION,
  mode: 'local',
  baseUrl: '',
  theme: 'system',
  language: 'system',
  ...UPSCALE_DEFAULTS,
};

// Compile-time: the schema's output is exactly Settings.
type Parsed = z.infer<typeof settingsSchema>;
export type SchemaMatchesSettings = [Parsed] extends [Settings] ? ([Settings] extends [Parsed] ? true : never) : never;
const _check: SchemaMatchesSettings = true;
void _check;
