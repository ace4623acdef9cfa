/**
 * The output's geometry: a scale factor, or an exact size (width, height, long side, or a box the image fits
 * inside; app/settings/upscaleOptions.ts width/height/longSide, engine/contract/geometry.ts). Each queued row
 * shows the size it will get before the run (QueueView). A typed size is stored once the field is left.
 */
import { useEffect, useId, useState } from 'react';
import { SCALES, type Scale } from '../../../engine/contract/enums.js';
import { MAX_OUTPUT_SIDE } from '../../../app/settings/upscaleOptions.js';
import type { Settings } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';

export const SIZE_MODES = ['scale', 'width', 'height', 'longSide', 'box'] as const;
export type SizeMode = (typeof SIZE_MODES)[number];

type Geometry = Pick<Settings, 'width' | 'height' | 'longSide'>;

/** Which of the five the settings hold. */
export function sizeModeOf(s: Geometry): SizeMode {
  if (s.longSide !== null) return 'longSide';
  if (s.width !== null && s.height !== null) return 'box';
  if (s.width !== null) return 'width';
  if (s.height !== null) return 'height';
  return 'scale';
}

/** The fields a change of mode stores: the other sides cleared, a common size to start from. */
function modeChange(mode: SizeMode, s: Geometry): Partial<Settings> {
  const w = s.width ?? 1920;
  const h = s.height ?? 1080;
  switch (mode) {
    case 'scale':
      return { width: null, height: null, longSide: null };
    case 'width':
      return { width: w, height: null, longSide: null, passes: 1 };
    case 'height':
      return { width: null, height: h, longSide: null, passes: 1 };
    case 'longSide':
      return { width: null, height: null, longSide: s.longSide ?? Math.max(w, h), passes: 1 };
    case 'box':
      return { width: w, height: h, longSide: null, passes: 1 };
  }
}

function PixelInput({
  id,
  label,
  value,
  onCommit,
}: {
  id: string;
  label: string;
  value: number;
  onCommit: (v: number) => void;
}) {
  const [text, setText] = useState(String(value));
  useEffect(() => setText(String(value)), [value]);
  const n = Number(text);
  const valid = /^\d+$/.test(text.trim()) && n >= 1 && n <= MAX_OUTPUT_SIDE;
  const commit = () => {
    if (valid && n !== value) onCommit(n);
    else if (!valid) setText(String(value));
  };
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="number"
        inputMode="numeric"
        min={1}
        max={MAX_OUTPUT_SIDE}
        step={1}
        value={text}
        aria-invalid={valid ? undefined : true}
        onChange={(e) => setText(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter') commit();
        }}
      />
    </div>
  );
}

export function SizeField({
  settings,
  isCloud,
  update,
}: {
  settings: Settings;
  isCloud: boolean;
  update: (patch: Partial<Settings>) => void;
}) {
  const id = useId();
  const { t } = useT();
  const mode = sizeModeOf(settings);
  return (
    <div className="field size-field">
      <label htmlFor={`${id}-mode`}>{t('options.size')}</label>
      <select
        id={`${id}-mode`}
        value={mode}
        aria-describedby={mode === 'scale' ? undefined : `${id}-hint`}
        onChange={(e) => update(modeChange(e.target.value as SizeMode, settings))}
      >
        {SIZE_MODES.map((m) => (
          <option key={m} value={m}>
            {t(`options.size.${m}`)}
          </option>
        ))}
      </select>
      {mode === 'scale' ? (
        <div className="field">
          <label htmlFor={`${id}-scale`}>{t('options.scale')}</label>
          <select
            id={`${id}-scale`}
            value={settings.scale}
            onChange={(e) => update({ scale: Number(e.target.value) as Scale })}
          >
            {SCALES.map((s) => (
              <option key={s} value={s}>
                ×{s}
              </option>
            ))}
          </select>
          {settings.scale > 4 ? (
            <p className="hint" data-testid="scale-hint">
              {t('options.scaleResizeHint', { scale: settings.scale })}
            </p>
          ) : null}
        </div>
      ) : (
        <>
          <div className="field-row">
            {mode === 'width' || mode === 'box' ? (
              <PixelInput
                id={`${id}-width`}
                label={t('options.sizeWidth')}
                value={settings.width ?? 1}
                onCommit={(width) => update({ width })}
              />
            ) : null}
            {mode === 'height' || mode === 'box' ? (
              <PixelInput
                id={`${id}-height`}
                label={t('options.sizeHeight')}
                value={settings.height ?? 1}
                onCommit={(height) => update({ height })}
              />
            ) : null}
            {mode === 'longSide' ? (
              <PixelInput
                id={`${id}-long`}
                label={t('options.sizeLongSide')}
                value={settings.longSide ?? 1}
                onCommit={(longSide) => update({ longSide })}
              />
            ) : null}
          </div>
          <p id={`${id}-hint`} className="hint" data-testid="size-hint">
            {t(isCloud ? 'options.sizeHintCloud' : 'options.sizeHint')}
          </p>
        </>
      )}
    </div>
  );
}
