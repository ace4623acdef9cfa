/**
 * First run: the three steps, and one sample image to try them on. The sample is added and, when the chosen
 * model can run here (the bundled models always can, offline), upscaled at once: one click to a result.
 * More models are offered below as an extra, with their sizes.
 */
import sampleUrl from '../assets/sample.png';
import { useT } from '../i18n/useT.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectIsCloud, selectModels } from '../stores/settingsStore.js';
import { useStartBlocker } from './ActionBar.js';
import { DOWNLOADS_ID, openModelDownloads, useSizeText } from './ModelDownloads.js';
import { focusMain } from './landmarks.js';

export function EmptyState() {
  const { addFiles, start } = useActions();
  const models = useSettings(selectModels);
  const sizeText = useSizeText();
  const isCloud = useSettings(selectIsCloud);
  const blocker = useStartBlocker();
  const { t } = useT();
  const trySample = async () => {
    // This guide (and the button) goes once the sample is in the queue: the focus waits in the main pane, where
    // the result appears, instead of falling to the page.
    focusMain();
    const bytes = await (await fetch(sampleUrl)).arrayBuffer();
    await addFiles([new File([bytes], 'crisp-sample.png', { type: 'image/png' })]);
    // Cloud runs cost credits: there the sample waits for Upscale. Locally it is free, so it runs now.
    if (!isCloud && blocker === null) await start();
  };
  const upscalers = models.filter((m) => m.kind !== 'face' && m.kind !== 'custom');
  const installed = upscalers.filter((m) => m.installed);
  const missing = upscalers.filter((m) => !m.installed);
  return (
    <div className="empty">
      <h3>{t('empty.title')}</h3>
      <ol className="steps">
        <li>
          <strong>{t('empty.step1')}</strong>
          {t('empty.step1Rest')}
        </li>
        <li>
          <strong>{t('empty.step2')}</strong>
          {t('empty.step2Rest')}
        </li>
        <li>
          <strong>{t('empty.step3')}</strong>
          {t('empty.step3Rest')}
        </li>
      </ol>
      <button type="button" onClick={() => void trySample()}>
        {t('empty.sample')}
      </button>
      {!isCloud && installed.length > 0 ? (
        <p className="muted small" data-testid="empty-offline">
          {t('empty.offline', { models: installed.map((m) => m.title).join(', ') })}
        </p>
      ) : null}
      {!isCloud && missing.length > 0 ? (
        <div className="empty-downloads" data-testid="empty-downloads">
          <p className="muted small">
            {t('empty.more', { n: missing.length })}{' '}
            {missing.map((m) => `${m.title} (${sizeText(m).replace(/ · $/, '') || m.licence})`).join(', ')}.
          </p>
          {/* The download rows live in one place, the settings' Download models list: this opens it. */}
          <button type="button" aria-controls={DOWNLOADS_ID} onClick={openModelDownloads}>
            {t('empty.showDownloads')}
          </button>
        </div>
      ) : null}
      <p className="muted small">{t('empty.help')}</p>
    </div>
  );
}
