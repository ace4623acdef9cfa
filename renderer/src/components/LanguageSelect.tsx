import { useEffect } from 'react';
import type { Language } from '../../../app/service/crispService.js';
import { LOCALE_NAMES, LOCALES } from '../i18n/index.js';
import { useT } from '../i18n/useT.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectLanguage } from '../stores/settingsStore.js';

/**
 * The interface language lives in settings like the theme. `<html lang>` always names the language
 * actually shown, so screen readers pronounce it right and the browser does not offer to translate.
 */
export function LanguageSelect() {
  const language = useSettings(selectLanguage);
  const { updateSettings } = useActions();
  const { t, locale } = useT();
  useEffect(() => {
    document.documentElement.lang = locale;
  }, [locale]);
  return (
    <label className="inline-field">
      {t('language.label')}
      <select value={language} onChange={(e) => void updateSettings({ language: e.target.value as Language })}>
        <option value="system">{t('language.system')}</option>
        {LOCALES.map((l) => (
          <option key={l} value={l} lang={l}>
            {LOCALE_NAMES[l]}
          </option>
        ))}
      </select>
    </label>
  );
}
