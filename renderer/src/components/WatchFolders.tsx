/**
 * Watched folders, compact: each with its preset, counts and pause/resume/remove; a row to add one (a full
 * path, or Choose… on the desktop) with a preset and sub-folders or not. Counts follow the service's
 * `watches` events. Refusals from main are shown as they are written.
 */
import { useEffect, useId, useState } from 'react';
import type { Preset, WatchView } from '../../../app/service/crispService.js';
import { credits } from '../format.js';
import { useT } from '../i18n/useT.js';
import { useApp } from '../stores/appContext.js';

export function WatchFolders() {
  const { service, desktop } = useApp();
  const tr = useT();
  const { t } = tr;
  const id = useId();
  const [watches, setWatches] = useState<WatchView[]>([]);
  const [presets, setPresets] = useState<Preset[]>([]);
  const [dir, setDir] = useState('');
  const [preset, setPreset] = useState('');
  const [recursive, setRecursive] = useState(false);
  const [mode, setMode] = useState<WatchView['mode']>('local');
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    void service.listWatches().then(setWatches, () => undefined);
    void service.listPresets().then(
      (r) => {
        setPresets(r.presets);
        setPreset((p) => p || r.chosen);
      },
      () => undefined,
    );
    return service.subscribe((e) => {
      if (e.type === 'watches') setWatches(e.watches);
    });
  }, [service]);

  const attempt = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
      setError(undefined);
      setWatches(await service.listWatches());
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  return (
    <fieldset className="watch-folders" data-testid="watch-folders">
      <legend>{t('watch.legend')}</legend>
      {watches.length === 0 ? <p className="hint">{t('watch.none')}</p> : null}
      <ul className="watch-list">
        {watches.map((w) => (
          <li key={w.id} data-testid="watch-row">
            <span className="watch-dir" title={`${w.dir} → ${w.outDir}`}>
              {w.dir}
            </span>{' '}
            <span className="hint">
              {/* Where it runs, and in Cloud what each image costs: a watched folder never spends silently. */}
              {w.mode === 'cloud'
                ? t('watch.whereCloud', { cost: credits(w.creditsPerImage ?? 0, tr) })
                : t('watch.whereLocal')}
              {' · '}
              {t('watch.counts', {
                preset: w.preset,
                done: w.counts.done,
                failed: w.counts.failed,
                pending: w.counts.pending,
              })}
              {w.paused ? ` · ${t('watch.paused')}` : ''}
            </span>
            {w.problem ? <span className="hint warning"> {w.problem}</span> : null}
            {w.mode === 'cloud' && !w.spendAllowed ? (
              <span className="watch-ask" role="status">
                <span className="hint warning">
                  {t(w.awaitingApproval ? 'watch.askWaiting' : 'watch.ask', {
                    cost: credits(w.creditsPerImage ?? 0, tr),
                  })}
                </span>{' '}
                <button
                  type="button"
                  aria-label={t('watch.allowLabel', { dir: w.dir })}
                  onClick={() => void attempt(() => service.allowWatchSpending(w.id))}
                >
                  {t('watch.allow')}
                </button>
              </span>
            ) : null}
            {w.lastFailure && w.counts.failed > 0 ? (
              <span className="hint warning" data-testid="watch-failure">
                {' '}
                {t('watch.failure', { name: w.lastFailure.name, reason: w.lastFailure.reason })}
              </span>
            ) : null}
            {/* Named per folder: a screen reader's button list otherwise reads "Pause, Stop watching" for each. */}
            <button
              type="button"
              aria-label={t(w.paused ? 'watch.resumeLabel' : 'watch.pauseLabel', { dir: w.dir })}
              onClick={() => void attempt(() => (w.paused ? service.resumeWatch(w.id) : service.pauseWatch(w.id)))}
            >
              {t(w.paused ? 'watch.resume' : 'watch.pause')}
            </button>
            <button
              type="button"
              aria-label={t('watch.removeLabel', { dir: w.dir })}
              onClick={() => void attempt(() => service.removeWatch(w.id))}
            >
              {t('watch.remove')}
            </button>
          </li>
        ))}
      </ul>
      <form
        className="input-row"
        onSubmit={(e) => {
          e.preventDefault();
          void attempt(async () => {
            await service.addWatch({ dir: dir.trim(), preset, recursive, mode });
            setDir('');
          });
        }}
      >
        <input
          type="text"
          aria-label={t('watch.folder')}
          placeholder={t('watch.folderPlaceholder')}
          spellCheck={false}
          value={dir}
          onChange={(e) => setDir(e.target.value)}
        />
        {desktop ? (
          <button
            type="button"
            aria-label={t('watch.choose')}
            onClick={async () => {
              const picked = await desktop.pickInputFolder();
              if (picked) setDir(picked);
            }}
          >
            {t('options.choose')}
          </button>
        ) : null}
        <select aria-label={t('watch.preset')} value={preset} onChange={(e) => setPreset(e.target.value)}>
          {presets.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
            </option>
          ))}
        </select>
        <select
          aria-label={t('watch.mode')}
          value={mode}
          onChange={(e) => setMode(e.target.value === 'cloud' ? 'cloud' : 'local')}
        >
          <option value="local">{t('watch.modeLocal')}</option>
          <option value="cloud">{t('watch.modeCloud')}</option>
        </select>
        <label className="check" htmlFor={`${id}-recursive`}>
          <input
            id={`${id}-recursive`}
            type="checkbox"
            checked={recursive}
            onChange={(e) => setRecursive(e.target.checked)}
          />
          {t('watch.recursive')}
        </label>
        <button type="submit" disabled={dir.trim() === '' || preset === ''}>
          {t('watch.add')}
        </button>
      </form>
      {error ? (
        <p className="hint warning" role="alert">
          {error}
        </p>
      ) : null}
    </fieldset>
  );
}
