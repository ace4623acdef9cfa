/**
 * What can be done with a finished image, the same in the queue row and in the comparison: Open and
 * Show in folder (desktop), Download (browser UI: a signed link), Copy image, Again (double upscale: the
 * result joins the queue as a new input), and drag it out of the window (desktop: a native file drag).
 */
import type { JobItem } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';
import { useActions, useApp } from '../stores/appContext.js';

export function ResultActions({ item }: { item: JobItem }) {
  const { desktop, browser } = useApp();
  const { open, reveal, download, copyImage, upscaleAgain } = useActions();
  const name = item.inputName;
  const { t } = useT();
  if (item.status !== 'done') return null;
  return (
    <>
      {desktop ? (
        <>
          <button type="button" aria-label={t('result.openNamed', { name })} onClick={() => void open(item.id)}>
            {t('result.open')}
          </button>
          <button type="button" aria-label={t('result.revealNamed', { name })} onClick={() => void reveal(item.id)}>
            {t('result.reveal')}
          </button>
        </>
      ) : null}
      {browser ? (
        <button type="button" aria-label={t('result.downloadNamed', { name })} onClick={() => void download([item.id])}>
          {t('result.download')}
        </button>
      ) : null}
      <button type="button" aria-label={t('result.copyNamed', { name })} onClick={() => void copyImage(item.id)}>
        {t('result.copy')}
      </button>
      <button
        type="button"
        aria-label={t('result.againNamed', { name })}
        title={t('result.againTitle')}
        onClick={() => void upscaleAgain(item.id)}
      >
        {t('result.again')}
      </button>
    </>
  );
}

/** Desktop: dragging a finished row hands the output file to the OS (webContents.startDrag in main). */
export function dragOutProps(item: JobItem, startDrag: ((id: string) => void) | undefined) {
  if (!startDrag || item.status !== 'done') return {};
  return {
    draggable: true,
    onDragStart: (e: { preventDefault(): void }) => {
      e.preventDefault();
      startDrag(item.id);
    },
  };
}
