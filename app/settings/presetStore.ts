/**
 * The user's presets on disk (presets.json in the Crisp data folder, beside the models folder), shared by the
 * desktop app and the command line so a preset made in one is there in the other. The file is read on every
 * call (the other may have changed it) and written atomically. A damaged file never stops anything: each
 * valid preset in it is kept. Built-in presets (presets.ts) are never stored and cannot be changed.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { userModelsDir } from '../../engine/core/index.js';
import { writeJsonAtomic, Mutex } from '../../engine/service/index.js';
import {
  BUILT_IN_PRESETS,
  DEFAULT_PRESET_NAME,
  PRESET_FILE_VERSION,
  presetFileSchema,
  presetNameSchema,
  presetOptionsSchema,
  sameName,
  zodSentence,
  type Preset,
  type PresetFile,
  type PresetOptions,
} from './presets.js';
import { CrispError } from '../../engine/contract/index.js';

/**
 * A refusal the user reads as is (unknown name, a name taken, a built-in changed, a bad import file): catalog row
 * preset-refused, told apart by that code.
 */
export class PresetError extends CrispError {
  override readonly name = 'PresetError';
  constructor(message: string) {
    super('preset-refused', message, { params: { detail: message } });
  }
}

/** Where presets live: $CRISP_PRESETS_FILE, else presets.json in the user's Crisp data folder. */
export function defaultPresetsFile(env: NodeJS.ProcessEnv = process.env): string {
  return env.CRISP_PRESETS_FILE
    ? path.resolve(env.CRISP_PRESETS_FILE)
    : path.join(path.dirname(userModelsDir(env)), 'presets.json');
}

interface Stored {
  version: 1;
  presets: { name: string; options: PresetOptions }[];
  defaultPreset: string;
}

const storedEntry = z.object({ name: presetNameSchema, options: presetOptionsSchema });

export interface PresetStore {
  /** Built-in presets first, then the user's, in the order they were made. */
  list(): Promise<Preset[]>;
  /** The preset with this name (any case); a PresetError listing the names when there is none. */
  get(name: string): Promise<Preset>;
  /** The preset `crisp FILE…` uses and the app applies on a first start. */
  getDefault(): Promise<Preset>;
  setDefault(name: string): Promise<Preset>;
  create(name: string, options: PresetOptions): Promise<Preset>;
  /** Replaces the options of a user preset. */
  update(name: string, options: PresetOptions): Promise<Preset>;
  rename(from: string, to: string): Promise<Preset>;
  remove(name: string): Promise<void>;
  /** The export document of the named presets (all of the user's when none are named). */
  exportPresets(names?: string[]): Promise<PresetFile>;
  /**
   * Imports an export file's text: validated whole (a tampered file imports nothing), names that are taken get
   * " (2)", " (3)"…; answers the presets added.
   */
  importPresets(text: string): Promise<Preset[]>;
}

export function openPresetStore(file: string = defaultPresetsFile()): PresetStore {
  const lock = new Mutex();

  async function read(): Promise<Stored> {
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(file, 'utf8'));
    } catch {
      return { version: 1, presets: [], defaultPreset: DEFAULT_PRESET_NAME };
    }
    const obj = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    const presets: Stored['presets'] = [];
    for (const p of Array.isArray(obj.presets) ? obj.presets : []) {
      const r = storedEntry.safeParse(p);
      if (r.success && !taken(r.data.name, presets)) presets.push(r.data);
    }
    const def = typeof obj.defaultPreset === 'string' ? obj.defaultPreset : DEFAULT_PRESET_NAME;
    return { version: 1, presets, defaultPreset: def };
  }

  function taken(name: string, presets: Stored['presets']): boolean {
    return BUILT_IN_PRESETS.some((b) => sameName(b.name, name)) || presets.some((p) => sameName(p.name, name));
  }

  function all(s: Stored): Preset[] {
    return [...BUILT_IN_PRESETS, ...s.presets.map((p) => ({ name: p.name, builtIn: false, options: p.options }))];
  }

  function find(s: Stored, name: string): Preset {
    const hit = all(s).find((p) => sameName(p.name, name));
    if (!hit) {
      throw new PresetError(
        `There is no preset named "${name}". Presets: ${all(s)
          .map((p) => `"${p.name}"`)
          .join(', ')}.`,
      );
    }
    return hit;
  }

  function checkName(name: string): string {
    const r = presetNameSchema.safeParse(name);
    if (!r.success) throw new PresetError(r.error.issues[0]?.message ?? 'Invalid preset name.');
    return r.data;
  }

  function checkOptions(options: unknown): PresetOptions {
    const r = presetOptionsSchema.safeParse(options);
    if (!r.success) throw new PresetError(`Invalid preset options: ${zodSentence(r.error)}.`);
    return r.data;
  }

  function userIndex(s: Stored, name: string, what: string): number {
    const hit = find(s, name);
    if (hit.builtIn) throw new PresetError(`"${hit.name}" is a built-in preset and cannot be ${what}.`);
    return s.presets.findIndex((p) => sameName(p.name, name));
  }

  const write = (s: Stored) => writeJsonAtomic(file, s);
  const change = <T>(fn: (s: Stored) => Promise<T> | T): Promise<T> => lock.run(async () => fn(await read()));

  return {
    list: async () => all(await read()),
    get: async (name) => find(await read(), name),
    async getDefault() {
      const s = await read();
      // A default that was deleted or renamed elsewhere falls back to the shipped one.
      return all(s).find((p) => sameName(p.name, s.defaultPreset)) ?? find(s, DEFAULT_PRESET_NAME);
    },
    setDefault: (name) =>
      change(async (s) => {
        const p = find(s, name);
        await write({ ...s, defaultPreset: p.name });
        return p;
      }),
    create: (name, options) =>
      change(async (s) => {
        const n = checkName(name);
        if (taken(n, s.presets)) throw new PresetError(`A preset named "${n}" already exists: choose another name.`);
        const entry = { name: n, options: checkOptions(options) };
        await write({ ...s, presets: [...s.presets, entry] });
        return { ...entry, builtIn: false };
      }),
    update: (name, options) =>
      change(async (s) => {
        const i = userIndex(s, name, 'changed');
        const entry = { name: s.presets[i]!.name, options: checkOptions(options) };
        await write({ ...s, presets: s.presets.map((p, j) => (j === i ? entry : p)) });
        return { ...entry, builtIn: false };
      }),
    rename: (from, to) =>
      change(async (s) => {
        const i = userIndex(s, from, 'renamed');
        const n = checkName(to);
        const old = s.presets[i]!;
        if (!sameName(old.name, n) && taken(n, s.presets))
          throw new PresetError(`A preset named "${n}" already exists: choose another name.`);
        const entry = { name: n, options: old.options };
        await write({
          ...s,
          presets: s.presets.map((p, j) => (j === i ? entry : p)),
          defaultPreset: sameName(s.defaultPreset, old.name) ? n : s.defaultPreset,
        });
        return { ...entry, builtIn: false };
      }),
    remove: (name) =>
      change(async (s) => {
        const i = userIndex(s, name, 'deleted');
        const old = s.presets[i]!;
        await write({
          ...s,
          presets: s.presets.filter((_p, j) => j !== i),
          defaultPreset: sameName(s.defaultPreset, old.name) ? DEFAULT_PRESET_NAME : s.defaultPreset,
        });
      }),
    async exportPresets(names) {
      const s = await read();
      const chosen = names && names.length > 0 ? names.map((n) => find(s, n)) : all(s).filter((p) => !p.builtIn);
      if (chosen.length === 0) throw new PresetError('There are no presets of your own to export: name one to export.');
      return {
        crispPresets: PRESET_FILE_VERSION,
        presets: chosen.map((p) => ({ name: p.name, options: p.options })),
      };
    },
    importPresets: (text) =>
      change(async (s) => {
        let raw: unknown;
        try {
          raw = JSON.parse(text);
        } catch {
          throw new PresetError('This presets file is not valid JSON: nothing was imported.');
        }
        const r = presetFileSchema.safeParse(raw);
        if (!r.success) {
          throw new PresetError(
            `This presets file was refused (${zodSentence(r.error)}): nothing was imported. Export the presets again from Crisp.`,
          );
        }
        const presets = [...s.presets];
        const added: Preset[] = [];
        for (const p of r.data.presets) {
          let name = p.name;
          for (let k = 2; taken(name, presets); k++) name = `${p.name.slice(0, 54)} (${k})`;
          presets.push({ name, options: p.options });
          added.push({ name, builtIn: false, options: p.options });
        }
        await write({ ...s, presets });
        return added;
      }),
  };
}
