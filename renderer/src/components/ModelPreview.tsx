/**
 * Local mode: what the chosen model makes of the same sample crop, beside the crop itself, so models can
 * be compared before a batch. Made on request (it runs the model once, then the app keeps it).
 */
import { useEffect, useState } from 'react';
import sampleUrl from '../assets/preview-sample.png';
import { messageOf } from '../stores/actions.js';
import { useApp, useSettings } from '../stores/appContext.js';
import { selectCurrentModel, selectIsCloud } from '../stores/settingsStore.js';

/** Object URLs of previews, per model, for this window's lifetime. */
const made = new Map<string, string>();

export function ModelPreview() {
  const model = useSettings(selectCurrentModel);
  const isCloud = useSettings(selectIsCloud);
  const { service } = useApp();
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
          {state.busy ? 'Making a preview…' : `Preview ${model.title}`}
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
        <img src={sampleUrl} alt="The sample crop, enlarged without a model" className="pixelated" />
        <img src={state.url} alt={`The sample crop upscaled by ${model.title}`} />
      </div>
      <figcaption className="hint">Before and after {model.title}, on the same sample crop.</figcaption>
    </figure>
  );
}
