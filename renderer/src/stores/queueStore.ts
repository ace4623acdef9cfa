/** The queue as the app layer last reported it, plus which finished item is open in the comparison. */
import { createStore } from 'zustand/vanilla';
import type { ItemStatus, JobItem, QueueSnapshot } from '../../../app/service/crispService.js';

export interface QueueState {
  queue: QueueSnapshot;
  /** Item open in the before/after comparison. */
  compareId: string | null;
  applySnapshot(queue: QueueSnapshot): void;
  applyItem(item: JobItem): void;
  openCompare(id: string): void;
  closeCompare(): void;
}

export const EMPTY_QUEUE: QueueSnapshot = { items: [], finished: 0, total: 0, percent: 0, running: false };

export type QueueStore = ReturnType<typeof createQueueStore>;

export function createQueueStore(initial: QueueSnapshot = EMPTY_QUEUE) {
  return createStore<QueueState>()((set) => ({
    queue: initial,
    compareId: null,
    applySnapshot: (queue) =>
      set((s) => ({
        queue,
        // A removed item cannot stay open in the comparison.
        compareId: s.compareId && queue.items.some((i) => i.id === s.compareId) ? s.compareId : null,
      })),
    // Item events arrive between snapshots (per-item progress); unknown ids wait for the next snapshot.
    applyItem: (item) =>
      set((s) => {
        const index = s.queue.items.findIndex((i) => i.id === item.id);
        if (index < 0) return s;
        const items = s.queue.items.slice();
        items[index] = item;
        return { queue: { ...s.queue, items } };
      }),
    openCompare: (id) => set({ compareId: id }),
    closeCompare: () => set({ compareId: null }),
  }));
}

const FINISHED: ReadonlySet<ItemStatus> = new Set(['done', 'failed', 'cancelled', 'skipped']);

export const selectItems = (s: QueueState) => s.queue.items;
export const selectRunning = (s: QueueState) => s.queue.running;
export const selectCompareItem = (s: QueueState) => s.queue.items.find((i) => i.id === s.compareId) ?? null;
export const selectHasWaiting = (s: QueueState) => s.queue.items.some((i) => i.status === 'queued');
export const selectCanStart = (s: QueueState) => !s.queue.running && selectHasWaiting(s);
export const selectHasFinished = (s: QueueState) => s.queue.items.some((i) => FINISHED.has(i.status));
export const selectBatch = (s: QueueState) => ({ finished: s.queue.finished, total: s.queue.total, percent: s.queue.percent, running: s.queue.running });
export const selectCreditsDeducted = (s: QueueState) => s.queue.items.reduce((sum, i) => sum + (i.creditsDeducted ?? 0), 0);
export const isFinished = (status: ItemStatus) => FINISHED.has(status);
