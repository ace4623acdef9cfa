/**
 * Local mode: models imported from files (as Upscayl users expect): import a .pth / .safetensors / .ckpt /
 * .onnx file (converted and smoke-tested on this computer), see what was imported, remove one, and, on the
 * desktop, open the folder they live in.
 */
import { useRef, useState } from 'react';
import { useT } from '../i18n/useT.js';
import { useActions, useApp, useSettings } from '../stores/appContext.js';
import { selectIsCloud, selectModels } from '../stores/settingsStore.js';

export function CustomModels() {
  const models = useSettings(selectModels);
  const isCloud = useSettings(selectIsCloud);
  const { desktop } = useApp();
  const { importModel, removeModel, openModelsFolder } = useActions();
  const input = useRef<HTMLInputElement>(null);
  const [importing, setImporting] = useState<string | null>(null);
  const { t } = useT();
  if (isCloud) return null;
  const custom = models.filter((m) => m.kind === 'custom');

  const onPicked = async (file: File | undefined) => {
    if (!file) return;
    setImporting(file.name);
    try {
      await importModel(file);
    } finally {
      setImporting(null);
    }
  };

  return (
    <details className="options">
      <summary>{t('custom.summary', { n: custom.length })}</summary>
      <p className="hint">{t('custom.hint')}</p>
      {custom.length ? (
        <ul className="custom-models" aria-label={t('custom.list')}>
          {custom.map((m) => (
            <li key={m.name}>
              <span className="model-download-name">
                {m.title} <span className="muted small">×{m.scale}</span>{' '}
                <span className="muted small">{t('custom.licence', { licence: m.licence })}</span>
                {/non-commercial/.test(m.licence) ? (
                  <strong className="small noncommercial" title={t('custom.nonCommercial')}>
                    {' '}
                    NC
                  </strong>
                ) : null}
                <span className="hint model-download-desc">{m.description}</span>
              </span>
              <button
                type="button"
                aria-label={t('custom.removeNamed', { name: m.title })}
                onClick={() => void removeModel(m.name)}
              >
                {t('custom.remove')}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <div className="input-row">
        <button type="button" disabled={importing !== null} onClick={() => input.current?.click()}>
          {importing ? t('custom.importing', { name: importing }) : t('custom.import')}
        </button>
        {desktop ? (
          <button type="button" onClick={() => void openModelsFolder()}>
            {t('custom.openFolder')}
          </button>
        ) : null}
      </div>
      <input
        ref={input}
        type="file"
        accept=".pth,.pt,.safetensors,.ckpt,.onnx"
        aria-label={t('custom.importLabel')}
        className="visually-hidden"
        tabIndex={-1}
        onChange={(e) => {
          const file = e.target.files?.[0];
          e.target.value = '';
          void onPicked(file);
        }}
      />
    </details>
  );
}
