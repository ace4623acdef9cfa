/** Local / Cloud: native radios in one named group, so arrow keys move between them. */
import { useActions, useSettings } from '../stores/appContext.js';
import { selectMode } from '../stores/settingsStore.js';

export function ModeSwitch() {
  const mode = useSettings(selectMode);
  const { updateSettings } = useActions();
  return (
    <div role="radiogroup" aria-label="Mode" className="segmented">
      {(['local', 'cloud'] as const).map((m) => (
        <label key={m} className={mode === m ? 'segment selected' : 'segment'}>
          <input type="radio" name="mode" value={m} checked={mode === m} onChange={() => void updateSettings({ mode: m })} />
          {m === 'local' ? 'Local' : 'Cloud'}
        </label>
      ))}
    </div>
  );
}
