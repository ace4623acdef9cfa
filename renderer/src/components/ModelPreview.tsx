/**
 * Local mode: what the chosen model makes of the same sample crop, beside the crop itself, so models can
 * be compared before a batch. Made on request (it runs the model once, then the app keeps it).
 */
import { useEffect, useState } from 'react';
import sampleUrl from '../assets/preview-sample.png';
import { messageOf } from '../stores/actions.js';
import { useT } from '../i18n/useT.js';
import { useApp, useSettings } from '../stores/appContext.js';
import { selectCurrentModel, selectIsCloud } from '../stores/settingsStore.js';

/** Object URLs of previews, per model, for this window's lifetime. */
const made = new Map<string, string>();

export function ModelPreview() {
  const model = useSettings(selectCurrentModel);
  const isCloud = useSettings(selectIsCloud);
  const { service } = useApp();
  const { t } = useT();
  const [state, setState] = useState<{ url?: string; busy?: boolean; error?: string }>({});
  useEffect(() => setState(model && made.has(model.name) ? { url: made.get(model.name)! } : {}), [model]);
  if (isCloud || !model?.installed) return null;

  const show = async () => {
    setState({ busy: true });
    try {
      const { mime, bytes } = await service.modelPreview(model.name);
      const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type: mime }));
      made.set(model.name, url);
      setState({ url });
    } catch (e) {
      setState({ error: messageOf(e) });
    }
  };

  if (!state.url) {
    return (
      <div className="model-preview">
        <button type="button" disabled={state.busy} onClick={() => void show()}>
          {state.busy ? t('preview.making') : t('preview.button', { name: model.title })}
        </button>
        {state.error ? (
          <p className="warning" role="alert">
            {state.error}
          </p>
        ) : null}
      </div>
    );
  }
  return (
    <figure className="model-preview">
      <div className="model-preview-pair">
        <img src={sampleUrl} alt={t('preview.beforeAlt')} className="pixelated" />
        <img src={state.url} alt={t('preview.afterAlt', { name: model.title })} />
      </div>
      <figcaption className="hint">{t('preview.caption', { name: model.title })}</figcaption>
    </figure>
  );
}
