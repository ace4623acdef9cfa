/** Local / Cloud: native radios in one named group, so arrow keys move between them. */
import { useT } from '../i18n/useT.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectMode } from '../stores/settingsStore.js';

export function ModeSwitch() {
  const mode = useSettings(selectMode);
  const { updateSettings } = useActions();
  const { t } = useT();
  return (
    <div role="radiogroup" aria-label={t('mode.label')} className="segmented">
      {(['local', 'cloud'] as const).map((m) => (
        <label key={m} className={mode === m ? 'segment selected' : 'segment'}>
          <input
            type="radio"
            name="mode"
            value={m}
            checked={mode === m}
            onChange={() => void updateSettings({ mode: m })}
          />
          {t(m === 'local' ? 'mode.local' : 'mode.cloud')}
        </label>
      ))}
    </div>
  );
}
