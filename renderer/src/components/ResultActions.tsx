/**
 * What can be done with a finished image, the same in the queue row and in the comparison: Open and
 * Show in folder (desktop), Download (browser UI: a signed link), Copy image, Again (double upscale: the
 * result joins the queue as a new input), and drag it out of the window (desktop: a native file drag).
 */
import type { JobItem } from '../../../app/service/crispService.js';
import { useActions, useApp } from '../stores/appContext.js';

export function ResultActions({ item }: { item: JobItem }) {
  const { desktop, browser } = useApp();
  const { open, reveal, download, copyImage, upscaleAgain } = useActions();
  const name = item.inputName;
  if (item.status !== 'done') return null;
  return (
    <>
      {desktop ? (
        <>
          <button type="button" aria-label={`Open ${name}`} onClick={() => void open(item.id)}>
            Open
          </button>
          <button type="button" aria-label={`Show ${name} in folder`} onClick={() => void reveal(item.id)}>
            Show in folder
          </button>
        </>
      ) : null}
      {browser ? (
        <button type="button" aria-label={`Download ${name}`} onClick={() => void download([item.id])}>
          Download
        </button>
      ) : null}
      <button type="button" aria-label={`Copy ${name}`} onClick={() => void copyImage(item.id)}>
        Copy
      </button>
      <button type="button" aria-label={`Upscale ${name} again`} title="Double upscale: run the result through the model again" onClick={() => void upscaleAgain(item.id)}>
        Again
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
