/** The translator for the language setting (or the system's languages); components re-render when it changes. */
import { useSettings } from '../stores/appContext.js';
import { selectLanguage } from '../stores/settingsStore.js';
import { resolveLocale, translator, type Translator } from './index.js';

export function useT(): Translator {
  const language = useSettings(selectLanguage);
  return translator(resolveLocale(language));
}
