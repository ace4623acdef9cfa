/** Settings as stored by the app layer, the model catalogue, and whether an API key is stored. */
import { createStore } from 'zustand/vanilla';
import type { ModelDownloadEvent, ModelInfo, Settings } from '../../../app/service/crispService.js';

export interface SettingsState {
  /** null until the first getSettings answers. */
  settings: Settings | null;
  models: ModelInfo[];
  hasApiKey: boolean;
  /** Latest progress of each model download of this session, by model name. */
  downloads: Record<string, ModelDownloadEvent>;
  setSettings(settings: Settings): void;
  setModels(models: ModelInfo[]): void;
  setHasApiKey(has: boolean): void;
  setDownload(event: ModelDownloadEvent): void;
}

export type SettingsStore = ReturnType<typeof createSettingsStore>;

export function createSettingsStore() {
  return createStore<SettingsState>()((set) => ({
    settings: null,
    models: [],
    hasApiKey: false,
    downloads: {},
    setSettings: (settings) => set({ settings }),
    setModels: (models) => set({ models }),
    setHasApiKey: (hasApiKey) => set({ hasApiKey }),
    setDownload: (event) => set((s) => ({ downloads: { ...s.downloads, [event.name]: event } })),
  }));
}

export const selectSettings = (s: SettingsState) => s.settings;
export const selectMode = (s: SettingsState) => s.settings?.mode ?? 'local';
export const selectIsCloud = (s: SettingsState) => s.settings?.mode === 'cloud';
export const selectModels = (s: SettingsState) => s.models;
export const selectCurrentModel = (s: SettingsState) => s.models.find((m) => m.name === s.settings?.model) ?? null;
export const selectLanguage = (s: SettingsState) => s.settings?.language ?? 'system';
export const selectTheme = (s: SettingsState) => s.settings?.theme ?? 'system';
export const selectDownloads = (s: SettingsState) => s.downloads;
