/**
 * Local mode: what the chosen model makes of a crop, beside the crop itself, so models can be compared before
 * a batch. The crop is the centre of the person's own image (the latest one added) when there is one — 256 px
 * after ×4, shown one above the other so each is at least that wide — else the built-in sample. Made on
 * request (it runs the model once, then the app keeps it).
 */
import { useEffect, useState } from 'react';
import sampleUrl from '../assets/preview-sample.png';
import { messageOf } from '../stores/actions.js';
import { useT } from '../i18n/useT.js';
import { useApp, useQueue, useSettings } from '../stores/appContext.js';
import { selectCurrentModel, selectIsCloud } from '../stores/settingsStore.js';

/** Object URLs of previews, per model and image, for this window's lifetime. */
const made = new Map<string, { before: string; after: string }>();

const urlOf = ({ mime, bytes }: { mime: string; bytes: Uint8Array }) =>
  URL.createObjectURL(new Blob([bytes as BlobPart], { type: mime }));

export function ModelPreview() {
  const model = useSettings(selectCurrentModel);
  const isCloud = useSettings(selectIsCloud);
  // The person's own image: the latest one added that could be read.
  const itemId = useQueue((s) => s.queue.items.findLast((i) => i.inputDimensions)?.id);
  const { service } = useApp();
  const { t } = useT();
  const key = model ? `${model.name}@${itemId ?? 'sample'}` : '';
  const [state, setState] = useState<{ before?: string; after?: string; busy?: boolean; error?: string }>({});
  useEffect(() => setState(made.get(key) ?? {}), [key]);
  if (isCloud || !model?.installed) return null;

  const show = async () => {
    setState({ busy: true });
    try {
      const after = urlOf(await service.modelPreview(model.name, ...(itemId ? [itemId] : [])));
      const before = itemId ? urlOf(await service.modelPreview(model.name, itemId, 'before')) : sampleUrl;
      made.set(key, { before, after });
      setState({ before, after });
    } catch (e) {
      setState({ error: messageOf(e) });
    }
  };

  if (!state.after) {
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
      <div className={`model-preview-pair${itemId ? ' own' : ''}`}>
        <img
          src={state.before}
          alt={itemId ? t('preview.ownBeforeAlt') : t('preview.beforeAlt')}
          className="pixelated"
        />
        <img
          src={state.after}
          alt={itemId ? t('preview.ownAfterAlt', { name: model.title }) : t('preview.afterAlt', { name: model.title })}
        />
      </div>
      <figcaption className="hint">
        {itemId ? t('preview.ownCaption', { name: model.title }) : t('preview.caption', { name: model.title })}
      </figcaption>
    </figure>
  );
}
