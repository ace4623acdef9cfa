/**
 * The preset row at the top of the options panel: choose a preset (its options fill the panel), save the
 * current options as a new one, rename or delete one of your own, export them to a JSON file or import one.
 * Names are typed inline (Electron has no window.prompt). Refusals from main are shown as they are written.
 */
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import type { Preset } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';
import { useApp, useSettings } from '../stores/appContext.js';

type Editing = { kind: 'save' | 'rename'; name: string } | undefined;

export function PresetPicker() {
  const { service } = useApp();
  const { t } = useT();
  const id = useId();
  const [presets, setPresets] = useState<Preset[]>([]);
  const [chosen, setChosen] = useState('');
  const [editing, setEditing] = useState<Editing>(undefined);
  const [message, setMessage] = useState<{ error: boolean; text: string } | undefined>(undefined);
  const fileInput = useRef<HTMLInputElement>(null);

  const reload = useCallback(async () => {
    const r = await service.listPresets();
    setPresets(r.presets);
    setChosen(r.chosen);
  }, [service]);
  useEffect(() => {
    void reload().catch(() => undefined);
  }, [reload]);

  const attempt = async (fn: () => Promise<string | undefined>) => {
    try {
      const done = await fn();
      setMessage(done ? { error: false, text: done } : undefined);
      await reload();
    } catch (e) {
      setMessage({ error: true, text: e instanceof Error ? e.message : String(e) });
    }
  };
  const current = presets.find((p) => p.name === chosen);
  const settings = useSettings((s) => s.settings);
  // Once an option differs from the chosen preset's, the box says "Custom" instead of naming a preset that no
  // longer describes the settings (choosing the preset again applies it).
  const custom =
    current !== undefined &&
    settings !== null &&
    Object.entries(current.options).some(
      ([k, v]) => JSON.stringify((settings as Record<string, unknown>)[k] ?? null) !== JSON.stringify(v ?? null),
    );

  const submitName = () =>
    attempt(async () => {
      if (!editing) return undefined;
      if (editing.kind === 'save') {
        const p = await service.savePreset(editing.name);
        await service.choosePreset(p.name);
      } else await service.renamePreset(chosen, editing.name);
      setEditing(undefined);
      return undefined;
    });

  return (
    <div className="field preset-picker" data-testid="preset-picker">
      <label htmlFor={`${id}-preset`}>{t('presets.label')}</label>
      <div className="input-row">
        <select
          id={`${id}-preset`}
          value={custom ? '' : chosen}
          onChange={(e) => {
            const name = e.target.value;
            // Chosen at once, so the box does not read "Custom" between the new settings and the reload.
            setChosen(name);
            void attempt(async () => {
              await service.choosePreset(name);
              return undefined;
            });
          }}
        >
          {custom ? (
            <option value="" disabled>
              {t('presets.custom')}
            </option>
          ) : null}
          {presets.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
            </option>
          ))}
        </select>
        <button type="button" onClick={() => setEditing({ kind: 'save', name: '' })}>
          {t('presets.save')}
        </button>
        {current && !current.builtIn ? (
          <>
            <button type="button" onClick={() => setEditing({ kind: 'rename', name: current.name })}>
              {t('presets.rename')}
            </button>
            <button
              type="button"
              onClick={() =>
                void attempt(async () => {
                  await service.deletePreset(current.name);
                  return t('presets.deleted', { name: current.name });
                })
              }
            >
              {t('presets.delete')}
            </button>
          </>
        ) : null}
        <button
          type="button"
          onClick={() =>
            void attempt(async () => {
              const text = await service.exportPresets();
              const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
              const a = document.createElement('a');
              a.href = url;
              a.download = 'crisp-presets.json';
              a.click();
              URL.revokeObjectURL(url);
              return undefined;
            })
          }
        >
          {t('presets.export')}
        </button>
        <button type="button" onClick={() => fileInput.current?.click()}>
          {t('presets.import')}
        </button>
        <input
          ref={fileInput}
          type="file"
          accept="application/json,.json"
          hidden
          aria-label={t('presets.importFile')}
          onChange={(e) => {
            const file = e.target.files?.[0];
            e.target.value = '';
            if (file)
              void attempt(async () => {
                const added = await service.importPresets(new TextDecoder().decode(await file.arrayBuffer()));
                return t('presets.imported', { names: added.map((p) => p.name).join(', ') });
              });
          }}
        />
      </div>
      {editing ? (
        <form
          className="input-row"
          onSubmit={(e) => {
            e.preventDefault();
            void submitName();
          }}
        >
          <input
            type="text"
            aria-label={t(editing.kind === 'save' ? 'presets.newName' : 'presets.renameTo')}
            value={editing.name}
            maxLength={60}
            autoFocus
            onChange={(e) => setEditing({ ...editing, name: e.target.value })}
            onKeyDown={(e) => {
              if (e.key === 'Escape') setEditing(undefined);
            }}
          />
          <button type="submit">{t('presets.ok')}</button>
          <button type="button" onClick={() => setEditing(undefined)}>
            {t('presets.cancel')}
          </button>
        </form>
      ) : null}
      {message ? (
        <p className={message.error ? 'hint warning' : 'hint'} role={message.error ? 'alert' : 'status'}>
          {message.text}
        </p>
      ) : null}
    </div>
  );
}
