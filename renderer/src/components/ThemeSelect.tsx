import { useEffect } from 'react';
import type { Theme } from '../../../app/service/crispService.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectTheme } from '../stores/settingsStore.js';

/** The theme lives in settings; the stylesheet keys off data-theme ("system" follows the OS). */
export function ThemeSelect() {
  const theme = useSettings(selectTheme);
  const { updateSettings } = useActions();
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  return (
    <label className="inline-field">
      Theme
      <select value={theme} onChange={(e) => void updateSettings({ theme: e.target.value as Theme })}>
        <option value="system">System</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}
