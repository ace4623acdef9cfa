/** First run: the three steps, and one sample image to try them on. */
import sampleUrl from '../assets/sample.png';
import { useActions } from '../stores/appContext.js';

export function EmptyState() {
  const { addFiles } = useActions();
  const trySample = async () => {
    const bytes = await (await fetch(sampleUrl)).arrayBuffer();
    await addFiles([new File([bytes], 'crisp-sample.png', { type: 'image/png' })]);
  };
  return (
    <div className="empty">
      <h3>Upscale in three steps</h3>
      <ol className="steps">
        <li>
          <strong>Add images</strong>: drop them anywhere on this window, paste one, or press Ctrl/⌘+O.
        </li>
        <li>
          <strong>Pick a model and a scale</strong> in the settings (a photo model for photos, an illustration model for drawings).
        </li>
        <li>
          <strong>Press Upscale</strong> (Ctrl/⌘+Enter), then compare, download or copy each result.
        </li>
      </ol>
      <button type="button" onClick={() => void trySample()}>
        Try a sample image
      </button>
      <p className="muted small">Press ? for all keyboard shortcuts.</p>
    </div>
  );
}
