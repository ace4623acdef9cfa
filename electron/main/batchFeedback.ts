/**
 * What the OS shows about a batch: the taskbar/dock progress while it runs, and a notification when it
 * ends (only if the window is not focused: a user looking at the queue needs no pop-up), and a badge
 * with the number of images still to do (dock on macOS, launcher on Linux).
 */
import type { CrispService, ServiceEvent } from '../../app/service/crispService.js';

export interface ProgressWindow {
  setProgressBar(progress: number): void;
  isFocused(): boolean;
  isDestroyed(): boolean;
}

export type Notify = (title: string, body: string) => void;

export function batchMessage(e: Extract<ServiceEvent, { type: 'batchFinished' }>): string {
  const images = (n: number) => `${n} image${n === 1 ? '' : 's'}`;
  const stopped = Math.max(0, e.total - e.done - e.failed);
  return `${images(e.done)} upscaled${e.failed ? `, ${e.failed} failed` : ''}${stopped ? `, ${stopped} stopped` : ''}.`;
}

export function followBatch(
  service: Pick<CrispService, 'subscribe'>,
  getWindow: () => ProgressWindow | null,
  notify: Notify,
  setBadge?: (count: number) => void,
): () => void {
  let badge = -1;
  return service.subscribe((event) => {
    const win = getWindow();
    if (event.type === 'queue') {
      const left = event.queue.items.filter((i) => i.status === 'queued' || i.status === 'running').length;
      if (setBadge && left !== badge) setBadge((badge = left));
      if (!win || win.isDestroyed()) return;
      // -1 removes the bar; Electron wants 0–1 while running.
      win.setProgressBar(event.queue.running ? Math.min(1, Math.max(0, event.queue.percent / 100)) : -1);
    } else if (event.type === 'batchFinished') {
      if (win && !win.isDestroyed()) win.setProgressBar(-1);
      if (!win || win.isDestroyed() || !win.isFocused()) notify('Crisp: batch finished', batchMessage(event));
    }
  });
}
