/**
 * The settings file's schema (zod), version 1. Fields added later within version 1 (`denoise`) are
 * migrated by the store's salvage step: a file without them gets their defaults. Field set and types follow `Settings` in crispService.ts;
 * the `satisfies` checks below fail to compile if the two ever drift apart.
 */
import { z } from 'zod';
import { COMPRESSION_MAX, COMPRESSION_MIN, MODEL_NAMES, OUTPUT_FORMATS, SCALES } from '../../engine/contract/index.js';
import { DEFAULT_TEMPLATE, templateProblem } from '../jobs/outputNames.js';
import type { Settings } from '../service/crispService.js';

export const SETTINGS_VERSION = 1;

const modelName = z.string().refine((m) => (MODEL_NAMES as readonly string[]).includes(m) || /^custom:[\w.-]{1,100}$/.test(m), {
  message: `must be one of ${MODEL_NAMES.join(', ')} or custom:<id>`,
});

const baseUrl = z.string().refine(
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

export const settingsFields = {
  mode: z.enum(['local', 'cloud']),
  baseUrl,
  model: modelName,
  scale: z.union(SCALES.map((s) => z.literal(s)) as [z.ZodLiteral<1>, z.ZodLiteral<2>, ...z.ZodLiteral<(typeof SCALES)[number]>[]]),
  format: z.enum(OUTPUT_FORMATS),
  compression: z.number().int().min(COMPRESSION_MIN).max(COMPRESSION_MAX),
  face: z.boolean(),
  faceModel: z.string().regex(/^$|^[\w.:-]{1,80}$/, { message: 'must be a face model name' }),
  faceStrength: z.number().min(0).max(1),
  outputFolder: z.string(),
  template: z.string().superRefine((t, ctx) => {
    const p = templateProblem(t);
    if (p) ctx.addIssue({ code: 'custom', message: p });
  }),
  overwrite: z.enum(['skip', 'replace', 'keep']),
  executionProvider: z.enum(['auto', 'cpu', 'webgpu', 'cuda', 'dml', 'coreml']),
  tileSize: z.number().int().min(32).max(4096).nullable(),
  threads: z.number().int().min(1).max(256).nullable(),
  theme: z.enum(['system', 'light', 'dark']),
  denoise: z.number().min(0).max(1),
};

export const settingsSchema = z.object({ version: z.literal(SETTINGS_VERSION), ...settingsFields });
export const settingsPatchSchema = z.object(settingsFields).partial().strict();

export const DEFAULT_SETTINGS: Settings = {
  version: 1,
  mode: 'local',
  baseUrl: '',
  model: 'digital-art-4x',
  scale: 4,
  format: 'png',
  compression: 0,
  face: false,
  // Added within version 1: an older file without them gets these defaults.
  faceModel: '',
  faceStrength: 1,
  outputFolder: '',
  template: DEFAULT_TEMPLATE,
  overwrite: 'keep',
  executionProvider: 'auto',
  tileSize: null,
  threads: null,
  theme: 'system',
  // 1 = the plain service-lite-4x model: no blend, and nothing beyond that model has to be installed.
  denoise: 1,
};

// Compile-time: the schema's output is exactly Settings.
type Parsed = z.infer<typeof settingsSchema>;
export type SchemaMatchesSettings = [Parsed] extends [Settings] ? ([Settings] extends [Parsed] ? true : never) : never;
const _check: SchemaMatchesSettings = true;
void _check;
