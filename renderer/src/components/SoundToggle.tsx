/** "Play a sound when a batch finishes": off by default, remembered by this window. */
import { useState } from 'react';
import { setSoundEnabled, soundEnabled } from '../service/chime.js';

export function SoundToggle() {
  const [on, setOn] = useState(soundEnabled);
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
      Play a sound when a batch finishes
    </label>
  );
}
