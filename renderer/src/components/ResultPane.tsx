/**
 * The picture first: the main pane shows a finished result as soon as there is one, with the before/after
 * comparison docked (no click needed). It follows the latest result until the person picks another row
 * ("Show" on its thumbnail); "Full window" opens the same view as a modal dialog.
 */
import { useEffect, useId, useRef } from 'react';
import { useT } from '../i18n/useT.js';
import { useApp, useQueue } from '../stores/appContext.js';
import { selectShownResult } from '../stores/queueStore.js';
import { CompareView } from './CompareView.js';

export function ResultPane() {
  const item = useQueue(selectShownResult);
  const running = useQueue((s) => s.queue.running);
  const { queue } = useApp();
  const { t } = useT();
  const titleId = useId();
  const pane = useRef<HTMLElement>(null);
  // While a batch runs, the queue keeps its running row in view and may scroll the pane past this result; once
  // the run is over (or another result is picked) the result's title and zoom bar come back into view.
  const shownId = item?.id;
  useEffect(() => {
    if (shownId !== undefined && !running) pane.current?.scrollIntoView?.({ block: 'start' });
  }, [shownId, running]);
  if (!item) return null;
  return (
    <section ref={pane} className="result-pane" aria-label={t('result.paneLabel', { name: item.inputName })}>
      <CompareView
        item={item}
        docked
        titleId={titleId}
        extra={
          <button
            type="button"
            aria-label={t('result.fullWindowNamed', { name: item.inputName })}
            onClick={() => queue.getState().openCompare(item.id)}
          >
            {t('result.fullWindow')}
          </button>
        }
      />
    </section>
  );
}
