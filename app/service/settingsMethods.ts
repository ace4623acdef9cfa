/** Subject "settings": the settings file and the API key (kept in the secret store, never in the file). */
import path from 'node:path';
import { prepareOutputFolder } from '../jobs/outputFolder.js';
import { guardStep, toUserError } from '../jobs/userErrors.js';
import { API_KEY_SECRET, type SecretStore } from '../secrets/secretStore.js';
import type { SettingsStore } from '../settings/settingsStore.js';
import type { SubjectService } from './methodTable.js';
import type { ServiceEvents } from './serviceEvents.js';
import { CrispError } from '../../engine/contract/index.js';

/**
 * How long choosing an output folder may take before the answer is "that place does not respond": the
 * check must answer while the person waits (the issue asks for 2 s), even for a dead network mount.
 */
export const OUTPUT_FOLDER_CHECK_MS = 1_500;

/**
 * An output folder is checked when it is chosen, not when the first image fails: it must be an absolute
 * path to a folder Crisp can create and write. (The browser UI has no native picker, so this is where a
 * typo is caught.) It uses the same guarded, one-level-at-a-time creation as a run (app/jobs/outputFolder.ts):
 * Node's recursive mkdir spins forever under /proc, and any step of a user-given path can hang, so every step
 * and the whole check have a deadline. Answers a sentence for the person, or undefined when the folder is fine.
 */
export async function outputFolderProblem(
  folder: string,
  timeoutMs: number = OUTPUT_FOLDER_CHECK_MS,
): Promise<string | undefined> {
  if (folder === '') return undefined;
  if (!path.isAbsolute(folder))
    return `The output folder must be a full path (for example ${path.resolve('/', 'Pictures', 'Upscaled')}), not "${folder}".`;
  try {
    await guardStep(prepareOutputFolder(folder, { timeoutMs }), { timeoutMs, what: `Checking ${folder}` });
  } catch (e) {
    return toUserError(e, { path: folder, action: 'use the output folder' }).message;
  }
  return undefined;
}

export function settingsMethods(
  store: SettingsStore,
  secrets: SecretStore,
  events: ServiceEvents,
  /** The local engine's usable execution providers (the backend asks its engine process). */
  devices: () => Promise<string[]>,
): SubjectService<'settings'> {
  return {
    getSettings: () => store.get(),
    async updateSettings(patch) {
      if (patch.outputFolder !== undefined) {
        const problem = await outputFolderProblem(patch.outputFolder);
        if (problem) throw new CrispError('bad-request', problem);
      }
      const next = await store.update(patch);
      events.emit({ type: 'settings', settings: next });
      return next;
    },
    async setApiKey(key) {
      await secrets.set(API_KEY_SECRET, key === null ? null : key.trim());
    },
    hasApiKey: async () => Boolean(await secrets.get(API_KEY_SECRET)),
    listDevices: devices,
  };
}
