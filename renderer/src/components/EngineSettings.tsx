/** Local engine knobs: execution provider, tile size, threads ("Automatic" is the default for each). */
import { useEffect, useId, useState } from 'react';
import { THREADS_RANGE } from '../optionRanges.js';
import type { ExecutionProviderSetting } from '../../../app/service/crispService.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectSettings } from '../stores/settingsStore.js';

const PROVIDERS: { value: ExecutionProviderSetting; label: string }[] = [
  { value: 'auto', label: 'Automatic' },
  { value: 'cpu', label: 'CPU' },
  { value: 'cuda', label: 'NVIDIA CUDA' },
  { value: 'dml', label: 'DirectML (Windows)' },
  { value: 'coreml', label: 'Core ML (macOS)' },
  { value: 'webgpu', label: 'WebGPU' },
];
const TILE_SIZES = [128, 192, 256, 384, 512, 768, 1024];

export function EngineSettings() {
  const settings = useSettings(selectSettings);
  const { updateSettings } = useActions();
  const id = useId();
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
      <summary>Engine settings</summary>
      <div className="field">
        <label htmlFor={`${id}-ep`}>Execution provider</label>
        <select id={`${id}-ep`} value={settings.executionProvider} onChange={(e) => void updateSettings({ executionProvider: e.target.value as ExecutionProviderSetting })}>
          {PROVIDERS.map((p) => (
            <option key={p.value} value={p.value}>
              {p.label}
            </option>
          ))}
        </select>
        <p className="hint">Crisp falls back to the CPU when the chosen one is not available.</p>
      </div>
      <div className="field-row">
        <div className="field">
          <label htmlFor={`${id}-tile`}>Tile size</label>
          <select
            id={`${id}-tile`}
            value={settings.tileSize ?? ''}
            onChange={(e) => void updateSettings({ tileSize: e.target.value === '' ? null : Number(e.target.value) })}
          >
            <option value="">Automatic</option>
            {TILE_SIZES.map((t) => (
              <option key={t} value={t}>
                {t} px
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-threads`}>Threads</label>
          <input
            id={`${id}-threads`}
            type="number"
            min={THREADS_RANGE.min}
            max={THREADS_RANGE.max}
            inputMode="numeric"
            placeholder="Automatic"
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
