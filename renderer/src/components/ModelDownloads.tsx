/** Local mode: the models that are not installed yet, with size, licence and description before the download, a Download button and its progress. */
import type { ModelDownloadEvent, ModelInfo } from '../../../app/service/crispService.js';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectDownloads, selectIsCloud, selectModels } from '../stores/settingsStore.js';

const mb = (bytes: number) => (bytes / 1048576).toFixed(1);

function DownloadRow(props: { model: ModelInfo; download: ModelDownloadEvent | undefined; disabled: boolean }) {
  const { model, download } = props;
  const { downloadModel } = useActions();
  const busy = download?.state === 'downloading';
  return (
    <li className="model-download">
      <span className="model-download-name">
        {model.title}{' '}
        <span className="muted small">
          ({model.downloadSize ? `${mb(model.downloadSize)} MB · ` : ''}
          {model.licence || 'licence not stated'})
        </span>
        <span className="hint model-download-desc">{model.description}</span>
      </span>
      {busy ? (
        <span className="model-download-progress">
          <progress
            aria-label={`Downloading ${model.title}`}
            max={download.total ?? undefined}
            value={download.total ? download.received : undefined}
          />
          <span className="muted">
            {mb(download.received)}
            {download.total ? ` / ${mb(download.total)}` : ''} MB
          </span>
        </span>
      ) : (
        <button type="button" aria-label={`Download ${model.title}`} disabled={props.disabled} onClick={() => void downloadModel(model.name)}>
          Download
        </button>
      )}
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
  // Cloud offers every contract model; there is nothing to download.
  if (isCloud) return null;
  const missing = models.filter((m) => !m.installed);
  if (missing.length === 0) return null;
  return (
    <details className="model-downloads">
      <summary>Download models ({missing.length} not installed)</summary>
      <ul aria-label="Models to download">
        {missing.map((m) => (
          <DownloadRow key={m.name} model={m} download={downloads[m.name]} disabled={isCloud} />
        ))}
      </ul>
    </details>
  );
}
