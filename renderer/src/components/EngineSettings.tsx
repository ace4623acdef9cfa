/** Local engine knobs: execution provider, tile size, threads ("Automatic" is the default for each). */
import { useEffect, useId, useState } from 'react';
import { THREADS_RANGE } from '../optionRanges.js';
import type { ExecutionProviderSetting, Settings } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';
import type { MessageKey } from '../i18n/catalog.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectSettings } from '../stores/settingsStore.js';

// Product names are the same in every language; the rest comes from the catalog.
const PROVIDERS: { value: ExecutionProviderSetting; label: string | { key: MessageKey } }[] = [
  { value: 'auto', label: { key: 'engine.auto' } },
  { value: 'cpu', label: 'CPU' },
  { value: 'cuda', label: 'NVIDIA CUDA' },
  { value: 'dml', label: { key: 'engine.dml' } },
  { value: 'coreml', label: { key: 'engine.coreml' } },
  { value: 'webgpu', label: 'WebGPU' },
];
const TILE_SIZES = [128, 192, 256, 384, 512, 768, 1024];
const PRECISION_LABELS: Record<Settings['precision'], MessageKey> = {
  auto: 'engine.auto',
  fp32: 'engine.fp32',
  int8: 'engine.int8',
};

export function EngineSettings() {
  const settings = useSettings(selectSettings);
  const { updateSettings } = useActions();
  const id = useId();
  const { t } = useT();
  const [threads, setThreads] = useState(settings?.threads ? String(settings.threads) : '');
  useEffect(() => setThreads(settings?.threads ? String(settings.threads) : ''), [settings?.threads]);
  if (!settings) return null;

  const commitThreads = () => {
    const n = threads.trim() === '' ? null : Number(threads);
    if (n !== null && (!Number.isInteger(n) || n < 1 || n > 1024)) {
      setThreads(settings.threads ? String(settings.threads) : '');
      return;
    }
    if (n !== settings.threads) void updateSettings({ threads: n });
  };

  return (
    <details className="options">
      <summary>{t('engine.summary')}</summary>
      <div className="field">
        <label htmlFor={`${id}-ep`}>{t('engine.provider')}</label>
        <select
          id={`${id}-ep`}
          value={settings.executionProvider}
          onChange={(e) => void updateSettings({ executionProvider: e.target.value as ExecutionProviderSetting })}
        >
          {PROVIDERS.map((p) => (
            <option key={p.value} value={p.value}>
              {typeof p.label === 'string' ? p.label : t(p.label.key)}
            </option>
          ))}
        </select>
        <p className="hint">{t('engine.fallback')}</p>
      </div>
      <div className="field">
        <label htmlFor={`${id}-precision`}>{t('engine.precision')}</label>
        <select
          id={`${id}-precision`}
          value={settings.precision}
          aria-describedby={`${id}-precision-hint`}
          onChange={(e) => void updateSettings({ precision: e.target.value as Settings['precision'] })}
        >
          {(Object.keys(PRECISION_LABELS) as Settings['precision'][]).map((p) => (
            <option key={p} value={p}>
              {t(PRECISION_LABELS[p])}
            </option>
          ))}
        </select>
        <p id={`${id}-precision-hint`} className="hint">
          {t('engine.precisionHint')}
        </p>
      </div>
      <div className="field-row">
        <div className="field">
          <label htmlFor={`${id}-tile`}>{t('engine.tile')}</label>
          <select
            id={`${id}-tile`}
            value={settings.tileSize ?? ''}
            onChange={(e) => void updateSettings({ tileSize: e.target.value === '' ? null : Number(e.target.value) })}
          >
            <option value="">{t('engine.auto')}</option>
            {TILE_SIZES.map((size) => (
              <option key={size} value={size}>
                {t('engine.px', { n: size })}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-threads`}>{t('engine.threads')}</label>
          <input
            id={`${id}-threads`}
            type="number"
            min={THREADS_RANGE.min}
            max={THREADS_RANGE.max}
            inputMode="numeric"
            placeholder={t('engine.auto')}
            value={threads}
            onChange={(e) => setThreads(e.target.value)}
            onBlur={commitThreads}
            onKeyDown={(e) => {
              if (e.key === 'Enter') commitThreads();
            }}
          />
        </div>
      </div>
    </details>
  );
}
