/** Subject "settings": the settings file and the API key (kept in the secret store, never in the file). */
import { API_KEY_SECRET, type SecretStore } from '../secrets/secretStore.js';
import type { SettingsStore } from '../settings/settingsStore.js';
import type { SubjectService } from './methodTable.js';
import type { ServiceEvents } from './serviceEvents.js';

export function settingsMethods(store: SettingsStore, secrets: SecretStore, events: ServiceEvents): SubjectService<'settings'> {
  return {
    getSettings: () => store.get(),
    async updateSettings(patch) {
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
