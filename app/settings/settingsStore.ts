/**
 * Persisted, validated, versioned settings. A damaged or older file never stops the app: each valid
 * field is kept, anything else falls back to its default. Updates are validated (zod) and refused with a
 * message naming the field. The API key is not a setting: it lives in the SecretStore.
 */
import { readFile } from 'node:fs/promises';
import { writeJsonAtomic, Mutex } from '../../engine/service/index.js';
import type { Settings } from '../service/crispService.js';
import { DEFAULT_SETTINGS, settingsFields, settingsPatchSchema } from './settingsSchema.js';
import { catalogMessage, CrispError } from '../../engine/contract/index.js';

/** A setting the option declaration refuses: catalog row invalid-setting. */
export class SettingsError extends CrispError {
  override readonly name = 'SettingsError';
  constructor(field: string, detail: string) {
    const params = { name: field, detail };
    super('invalid-setting', catalogMessage('invalid-setting', params), { params });
  }
}

export interface SettingsStore {
  get(): Promise<Settings>;
  update(patch: Partial<Omit<Settings, 'version'>>): Promise<Settings>;
}

function salvage(raw: unknown): Settings {
  const out: Record<string, unknown> = { ...DEFAULT_SETTINGS };
  if (raw && typeof raw === 'object') {
    for (const [key, schema] of Object.entries(settingsFields)) {
      const r = schema.safeParse((raw as Record<string, unknown>)[key]);
      if (r.success) out[key] = r.data;
    }
  }
  return out as unknown as Settings;
}

export async function openSettingsStore(file: string, defaults: Partial<Settings> = {}): Promise<SettingsStore> {
  const lock = new Mutex();
  let current: Settings;
  try {
    current = salvage({ ...DEFAULT_SETTINGS, ...defaults, ...(JSON.parse(await readFile(file, 'utf8')) as object) });
  } catch {
    current = salvage({ ...DEFAULT_SETTINGS, ...defaults });
  }
  return {
    get: async () => ({ ...current }),
    update: (patch) =>
      lock.run(async () => {
        const r = settingsPatchSchema.safeParse(patch);
        if (!r.success) {
          const issue = r.error.issues[0];
          const field =
            issue?.path.join('.') ||
            (issue && 'keys' in issue ? String((issue as { keys: string[] }).keys[0]) : 'settings');
          throw new SettingsError(field, issue?.message ?? 'invalid value');
        }
        const next: Settings = { ...current, ...(r.data as Partial<Settings>), version: 1 };
        await writeJsonAtomic(file, next);
        current = next;
        return { ...current };
      }),
  };
}
