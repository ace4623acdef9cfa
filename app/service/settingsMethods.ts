/** Subject "settings": the settings file and the API key (kept in the secret store, never in the file). */
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { BadRequestError } from '../backends/errors.js';
import { API_KEY_SECRET, type SecretStore } from '../secrets/secretStore.js';
import type { SettingsStore } from '../settings/settingsStore.js';
import type { SubjectService } from './methodTable.js';
import type { ServiceEvents } from './serviceEvents.js';

/**
 * An output folder is checked when it is chosen, not when the first image fails: it must be an absolute
 * path to a folder Crisp can create and write. (The browser UI has no native picker, so this is where a
 * typo is caught.)
 */
export async function outputFolderProblem(folder: string): Promise<string | undefined> {
  if (folder === '') return undefined;
  if (!path.isAbsolute(folder))
    return `The output folder must be a full path (for example ${path.resolve('/', 'Pictures', 'Upscaled')}), not "${folder}".`;
  try {
    await mkdir(folder, { recursive: true });
    if (!(await stat(folder)).isDirectory())
      return `${folder} is a file, not a folder: choose a folder for the results.`;
    await access(folder, constants.W_OK);
  } catch {
    return `Crisp cannot create or write to ${folder}: choose another output folder.`;
  }
  return undefined;
}

export function settingsMethods(
  store: SettingsStore,
  secrets: SecretStore,
  events: ServiceEvents,
): SubjectService<'settings'> {
  return {
    getSettings: () => store.get(),
    async updateSettings(patch) {
      if (patch.outputFolder !== undefined) {
        const problem = await outputFolderProblem(patch.outputFolder);
        if (problem) throw new BadRequestError(problem);
      }
      const next = await store.update(patch);
      events.emit({ type: 'settings', settings: next });
      return next;
    },
    async setApiKey(key) {
      await secrets.set(API_KEY_SECRET, key === null ? null : key.trim());
    },
    hasApiKey: async () => Boolean(await secrets.get(API_KEY_SECRET)),
  };
}
