/**
 * Subject "presets": the named option sets the app and the command line share (app/settings/presetStore.ts).
 * Choosing a preset writes its options into the settings (the options panel then shows them) and makes it the
 * default; saving one takes the current settings' preset fields. Refusals are sentences (catalog preset-refused).
 */
import type { PresetStore } from '../settings/presetStore.js';
import { presetOptionsOf } from '../settings/presets.js';
import type { SettingsStore } from '../settings/settingsStore.js';
import type { SubjectService } from './methodTable.js';
import type { ServiceEvents } from './serviceEvents.js';
import { outputFolderProblem } from './settingsMethods.js';
import { CrispError } from '../../engine/contract/index.js';

export function presetMethods(
  presets: PresetStore,
  settings: SettingsStore,
  events: ServiceEvents,
): SubjectService<'presets'> {
  return {
    // The store's refusals carry their own catalog code (preset-refused) and sentence: they pass as they are.
    listPresets: async () => {
      const [all, chosen] = await Promise.all([presets.list(), presets.getDefault()]);
      return { presets: all, chosen: chosen.name };
    },
    choosePreset: async (name) => {
      const p = await presets.get(name);
      const problem = await outputFolderProblem(p.options.outputFolder);
      if (problem) throw new CrispError('bad-request', `Preset "${p.name}": ${problem}`);
      const next = await settings.update(p.options);
      await presets.setDefault(p.name);
      events.emit({ type: 'settings', settings: next });
      return next;
    },
    savePreset: async (name) => presets.create(name, presetOptionsOf(await settings.get())),
    renamePreset: async (from, to) => presets.rename(from, to),
    deletePreset: async (name) => presets.remove(name),
    exportPresets: async (names) => `${JSON.stringify(await presets.exportPresets(names), null, 2)}\n`,
    importPresets: async (text) => presets.importPresets(text),
  };
}
