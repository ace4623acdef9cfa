/**
 * What the OS shows about a batch: the taskbar/dock progress while it runs, and a notification when it
 * ends (only if the window is not focused: a user looking at the queue needs no pop-up).
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
  if (e.failed === 0) return `${images(e.done)} upscaled.`;
  return `${images(e.done)} upscaled, ${e.failed} failed.`;
}

export function followBatch(service: Pick<CrispService, 'subscribe'>, getWindow: () => ProgressWindow | null, notify: Notify): () => void {
  return service.subscribe((event) => {
    const win = getWindow();
    if (event.type === 'queue') {
      if (!win || win.isDestroyed()) return;
      // -1 removes the bar; Electron wants 0–1 while running.
      win.setProgressBar(event.queue.running ? Math.min(1, Math.max(0, event.queue.percent / 100)) : -1);
    } else if (event.type === 'batchFinished') {
      if (win && !win.isDestroyed()) win.setProgressBar(-1);
      if (!win || win.isDestroyed() || !win.isFocused()) notify('Crisp: batch finished', batchMessage(event));
    }
  });
}
