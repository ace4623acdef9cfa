/** "Play a sound when a batch finishes": off by default, remembered by this window. */
import { useState } from 'react';
import { useT } from '../i18n/useT.js';
import { setSoundEnabled, soundEnabled } from '../service/chime.js';

export function SoundToggle() {
  const [on, setOn] = useState(soundEnabled);
  const { t } = useT();
  return (
    <label className="check">
      <input
        type="checkbox"
        checked={on}
        onChange={(e) => {
          setSoundEnabled(e.target.checked);
          setOn(e.target.checked);
        }}
      />
      {t('sound.label')}
    </label>
  );
}
