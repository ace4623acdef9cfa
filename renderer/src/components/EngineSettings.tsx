/** Local engine knobs: execution provider, tile size, threads ("Automatic" is the default for each). */
import { useEffect, useId, useState } from 'react';
import { THREADS_RANGE } from '../optionRanges.js';
import type { CrispService, ExecutionProviderSetting, Settings } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';
import type { MessageKey } from '../i18n/catalog.js';
import { useActions, useApp, useQueue, useSettings } from '../stores/appContext.js';
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
type Translate = ReturnType<typeof useT>['t'];
const labelOf = (value: string, t: Translate): string => {
  const p = PROVIDERS.find((q) => q.value === value);
  if (!p) return value;
  return typeof p.label === 'string' ? p.label : t(p.label.key);
};

/**
 * The providers onnxruntime offers on this computer, asked once per service of the engine process (the only
 * one that loads onnxruntime, started for it if need be); undefined while asking or when it could not answer.
 */
const devicesAsked = new WeakMap<CrispService, Promise<string[] | undefined>>();

function useDevices(enabled: boolean): string[] | undefined {
  const { service } = useApp();
  const [devices, setDevices] = useState<string[] | undefined>(undefined);
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    let asked = devicesAsked.get(service);
    if (!asked) {
      asked = service.listDevices().then(
        (list) => list,
        () => {
          devicesAsked.delete(service); // ask again next time the panel opens
          return undefined;
        },
      );
      devicesAsked.set(service, asked);
    }
    void asked.then((list) => live && setDevices(list));
    return () => {
      live = false;
    };
  }, [service, enabled]);
  return devices;
}

const TILE_SIZES = [128, 192, 256, 384, 512, 768, 1024];
const PRECISION_LABELS: Record<Settings['precision'], MessageKey> = {
  auto: 'engine.auto',
  fp32: 'engine.fp32',
  int8: 'engine.int8',
  fp16: 'engine.fp16',
};

export function EngineSettings() {
  const settings = useSettings(selectSettings);
  const { updateSettings } = useActions();
  const id = useId();
  const { t } = useT();
  const [threads, setThreads] = useState(settings?.threads ? String(settings.threads) : '');
  // Asked once the panel is opened: answering starts the engine process, which a closed panel has no use for.
  const [open, setOpen] = useState(false);
  const devices = useDevices(open);
  // What ran the latest local image (the engine reports it with each result).
  const used = useQueue((s) => s.queue.items.findLast((i) => i.status === 'done' && i.device)?.device);
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
    <details className="options" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>{t('engine.summary')}</summary>
      <div className="field">
        <label htmlFor={`${id}-ep`}>{t('engine.provider')}</label>
        <select
          id={`${id}-ep`}
          value={settings.executionProvider}
          onChange={(e) => void updateSettings({ executionProvider: e.target.value as ExecutionProviderSetting })}
        >
          {/* Only what this computer's runtime has (plus a saved choice it lacks, said so); all while asking. */}
          {PROVIDERS.filter(
            (p) =>
              p.value === 'auto' ||
              p.value === settings.executionProvider ||
              devices === undefined ||
              devices.includes(p.value),
          ).map((p) => (
            <option key={p.value} value={p.value}>
              {devices && p.value !== 'auto' && !devices.includes(p.value)
                ? t('engine.unavailable', { name: labelOf(p.value, t) })
                : labelOf(p.value, t)}
            </option>
          ))}
        </select>
        <p className="hint" data-testid="device-in-use" aria-live="polite">
          {used
            ? t('engine.inUse', {
                device: labelOf(used.provider, t),
                precision: t(PRECISION_LABELS[used.precision]),
              })
            : devices
              ? t('engine.autoOrder', { devices: devices.map((d) => labelOf(d, t)).join(', ') })
              : t('engine.checking')}
        </p>
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
                {/* A tile side is a measure, not a count: "1024 px", never "1,024 px". */}
                {t('engine.px', { n: String(size) })}
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
