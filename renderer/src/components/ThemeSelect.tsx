import { useEffect } from 'react';
import type { Theme } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectTheme } from '../stores/settingsStore.js';

/**
 * The theme lives in settings; the stylesheet keys off data-theme, which is always the effective
 * "light" or "dark": "system" is resolved here and follows the OS while the app runs.
 */
export function ThemeSelect() {
  const theme = useSettings(selectTheme);
  const { updateSettings } = useActions();
  const { t } = useT();
  useEffect(() => {
    const dark = window.matchMedia?.('(prefers-color-scheme: dark)');
    const apply = () => {
      document.documentElement.dataset.theme = theme === 'system' ? (dark?.matches ? 'dark' : 'light') : theme;
    };
    apply();
    if (theme !== 'system' || !dark) return;
    dark.addEventListener('change', apply);
    return () => dark.removeEventListener('change', apply);
  }, [theme]);
  return (
    <label className="inline-field">
      {t('theme.label')}
      <select value={theme} onChange={(e) => void updateSettings({ theme: e.target.value as Theme })}>
        <option value="system">{t('theme.system')}</option>
        <option value="light">{t('theme.light')}</option>
        <option value="dark">{t('theme.dark')}</option>
      </select>
    </label>
  );
}
