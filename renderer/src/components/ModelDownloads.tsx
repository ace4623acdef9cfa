/** Local mode: the models that are not installed yet, with size, licence and description before the download, a Download button and its progress. */
import type { ModelDownloadEvent, ModelInfo } from '../../../app/service/crispService.js';
import { modelDescription } from '../i18n/modelText.js';
import { useT } from '../i18n/useT.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectDownloads, selectIsCloud, selectModels } from '../stores/settingsStore.js';

/** The element id of the Download models list, for controls elsewhere that open it. */
export const DOWNLOADS_ID = 'model-downloads';

/** Opens the Download models list and moves focus to it (the first-run guide's "Show downloads"). */
export function openModelDownloads(): void {
  const details = document.getElementById(DOWNLOADS_ID);
  if (!(details instanceof HTMLDetailsElement)) return;
  details.open = true;
  details.querySelector('summary')?.focus();
  details.scrollIntoView?.({ block: 'nearest' });
}

/** "12.3 MB · " or "about 64.0 MB · " (an estimate), empty when the size is unknown. */
export function useSizeText(): (model: ModelInfo) => string {
  const { t, num } = useT();
  const mb = (bytes: number) => num(bytes / 1048576, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  return (model) =>
    model.downloadSize
      ? t(model.downloadSizeApprox ? 'downloads.sizeAbout' : 'downloads.size', { mb: mb(model.downloadSize) })
      : '';
}

function DownloadRow(props: { model: ModelInfo; download: ModelDownloadEvent | undefined; disabled: boolean }) {
  const { model, download } = props;
  const { downloadModel, cancelDownload } = useActions();
  const { t, num, locale } = useT();
  const sizeText = useSizeText();
  const mb = (bytes: number) => num(bytes / 1048576, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const busy = download?.state === 'downloading';
  return (
    <li className="model-download">
      <span className="model-download-name">
        {model.title}{' '}
        <span className="muted small">
          ({sizeText(model)}
          {model.licence || t('downloads.licenceUnknown')})
        </span>
        <span className="hint model-download-desc">{modelDescription(model, locale)}</span>
      </span>
      {busy ? (
        <span className="model-download-progress">
          <progress
            aria-label={t('downloads.progressLabel', { name: model.title })}
            max={download.total ?? undefined}
            value={download.total ? download.received : undefined}
          />
          <span className="muted">
            {download.total
              ? t('downloads.progressOf', { received: mb(download.received), total: mb(download.total) })
              : t('downloads.progress', { received: mb(download.received) })}
          </span>
          <button
            type="button"
            aria-label={t('downloads.cancelLabel', { name: model.title })}
            onClick={() => void cancelDownload(model.name)}
          >
            {t('downloads.cancel')}
          </button>
        </span>
      ) : (
        <button
          type="button"
          aria-label={t('downloads.buttonLabel', { name: model.title })}
          disabled={props.disabled}
          onClick={() => void downloadModel(model.name)}
        >
          {t('downloads.button')}
        </button>
      )}
      {download?.state === 'cancelled' ? (
        <span className="muted small" role="status">
          {t('downloads.cancelled')}
        </span>
      ) : null}
      {download?.state === 'failed' && download.error ? (
        <span className="warning" role="status">
          {download.error}
        </span>
      ) : null}
    </li>
  );
}

export function ModelDownloads() {
  const models = useSettings(selectModels);
  const downloads = useSettings(selectDownloads);
  const isCloud = useSettings(selectIsCloud);
  const { t } = useT();
  // Cloud offers every contract model; there is nothing to download.
  if (isCloud) return null;
  const missing = models.filter((m) => !m.installed);
  if (missing.length === 0) return null;
  const faces = missing.filter((m) => m.kind === 'face').length;
  return (
    <details className="model-downloads" id={DOWNLOADS_ID}>
      <summary>
        {/* The first-run guide counts upscaling models only ("10 more models"): the face models are named apart. */}
        {faces > 0
          ? t('downloads.summaryFaces', { n: missing.length, upscalers: missing.length - faces, faces })
          : t('downloads.summary', { n: missing.length })}
      </summary>
      <ul aria-label={t('downloads.list')}>
        {missing.map((m) => (
          <DownloadRow key={m.name} model={m} download={downloads[m.name]} disabled={isCloud} />
        ))}
      </ul>
    </details>
  );
}
