/** The queue: one row per image with its thumbnail, progress, plain-words error and actions. */
import { useShallow } from 'zustand/react/shallow';
import type { JobItem } from '../../../app/service/crispService.js';
import { credits, dimensions, statusLabel } from '../format.js';
import { useActions, useApp, useQueue } from '../stores/appContext.js';
import { selectHasFinished, selectItems } from '../stores/queueStore.js';
import { Thumbnail } from './Thumbnail.js';

function QueueRow({ item }: { item: JobItem }) {
  const { retry, cancelItem, removeItem, reveal } = useActions();
  const { queue, desktop } = useApp();
  const name = item.inputName;
  return (
    <li className={`item status-${item.status}`} aria-label={name}>
      <Thumbnail id={item.id} which="input" alt="" />
      <div className="item-body">
        <div className="item-title">
          <span className="item-name" title={item.inputPath}>
            {name}
          </span>
          <span className="muted small">
            {dimensions(item.inputDimensions)}
            {item.outputDimensions ? ` → ${dimensions(item.outputDimensions)}` : ''}
          </span>
        </div>
        <div className="item-progress">
          <progress aria-label={`${name} progress`} max={100} value={item.status === 'done' ? 100 : Math.round(item.percent)} />
          <span className="item-status" data-testid="item-status">
            {statusLabel(item)}
          </span>
          {item.creditsDeducted ? <span className="muted small">−{credits(item.creditsDeducted)}</span> : null}
        </div>
        {item.error ? <p className="item-error">{item.error}</p> : null}
      </div>
      <div className="item-actions">
        {item.status === 'done' ? (
          <button type="button" aria-label={`Compare ${name}`} onClick={() => queue.getState().openCompare(item.id)}>
            Compare
          </button>
        ) : null}
        {item.status === 'done' && desktop ? (
          <button type="button" aria-label={`Show ${name} in folder`} onClick={() => void reveal(item.id)}>
            Show in folder
          </button>
        ) : null}
        {item.status === 'failed' || item.status === 'cancelled' ? (
          <button type="button" aria-label={`Retry ${name}`} onClick={() => void retry(item.id)}>
            Retry
          </button>
        ) : null}
        {item.status === 'queued' || item.status === 'running' ? (
          <button type="button" aria-label={`Cancel ${name}`} onClick={() => void cancelItem(item.id)}>
            Cancel
          </button>
        ) : null}
        {item.status !== 'running' ? (
          <button type="button" aria-label={`Remove ${name}`} className="quiet" onClick={() => void removeItem(item.id)}>
            ✕
          </button>
        ) : null}
      </div>
    </li>
  );
}

export function QueueView() {
  const items = useQueue(useShallow(selectItems));
  const hasFinished = useQueue(selectHasFinished);
  const { clearFinished, retry } = useActions();
  const anyFailed = items.some((i) => i.status === 'failed');
  return (
    <section aria-label="Queue" className="queue">
      <div className="queue-head">
        <h2>Queue</h2>
        <span className="muted small">
          {items.length} image{items.length === 1 ? '' : 's'}
        </span>
        <span className="spacer" />
        {anyFailed ? (
          <button type="button" onClick={() => void retry()}>
            Retry failed
          </button>
        ) : null}
        <button type="button" disabled={!hasFinished} onClick={() => void clearFinished()}>
          Clear finished
        </button>
      </div>
      {items.length === 0 ? (
        <p className="muted empty">No images yet. Add some above.</p>
      ) : (
        <ul className="items">
          {items.map((item) => (
            <QueueRow key={item.id} item={item} />
          ))}
        </ul>
      )}
    </section>
  );
}
