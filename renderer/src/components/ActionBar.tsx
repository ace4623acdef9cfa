/** Upscale and Stop, with the whole batch's progress. Ctrl/⌘+Enter upscales, Ctrl/⌘+. stops. */
import { useEffect } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useActions, useQueue, useSettings } from '../stores/appContext.js';
import { selectBatch, selectCanStart } from '../stores/queueStore.js';
import { selectCurrentModel, selectIsCloud } from '../stores/settingsStore.js';

export function ActionBar() {
  const batch = useQueue(useShallow(selectBatch));
  const canStart = useQueue(selectCanStart);
  const model = useSettings(selectCurrentModel);
  const isCloud = useSettings(selectIsCloud);
  const { start, stop } = useActions();
  const modelMissing = !!model && !model.installed && !isCloud;
  const startable = canStart && !modelMissing;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!(e.ctrlKey || e.metaKey)) return;
      if (e.key === 'Enter' && startable) {
        e.preventDefault();
        void start();
      } else if (e.key === '.' && batch.running) {
        e.preventDefault();
        void stop();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [startable, batch.running, start, stop]);

  return (
    <footer className="actionbar">
      <div className="batch">
        <progress aria-label="Batch progress" max={100} value={Math.round(batch.percent)} />
        <span data-testid="batch-status" aria-live="polite">
          {batch.total === 0
            ? 'Nothing to do yet'
            : batch.running
              ? `Upscaling: ${batch.finished} of ${batch.total} finished (${Math.round(batch.percent)}%)`
              : `${batch.finished} of ${batch.total} finished`}
        </span>
      </div>
      <button type="button" className="primary" disabled={!startable} aria-keyshortcuts="Control+Enter" onClick={() => void start()}>
        Upscale
      </button>
      <button type="button" disabled={!batch.running} aria-keyshortcuts="Control+." onClick={() => void stop()}>
        Stop
      </button>
    </footer>
  );
}
