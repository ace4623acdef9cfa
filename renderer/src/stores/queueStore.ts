/** The queue as the app layer last reported it, plus which finished item is open in the comparison. */
import { createStore } from 'zustand/vanilla';
import type { JobItem, QueueSnapshot } from '../../../app/service/crispService.js';

export interface QueueState {
  queue: QueueSnapshot;
  /** Item open in the before/after comparison. */
  compareId: string | null;
  /** Item chosen for the main pane; null follows the latest finished result (selectShownResult). */
  selectedId: string | null;
  /** When this page saw each item start and finish (ms since epoch): per-item durations, elapsed and ETA. */
  timing: Record<string, { start: number; end?: number }>;
  /** When the current (or last) run started, as seen by this page; null before any run. */
  runStartedAt: number | null;
  applySnapshot(queue: QueueSnapshot): void;
  applyItem(item: JobItem): void;
  openCompare(id: string): void;
  closeCompare(): void;
  /** Shows this finished item in the main pane (null: back to following the latest). */
  select(id: string | null): void;
}

export const EMPTY_QUEUE: QueueSnapshot = { items: [], finished: 0, total: 0, percent: 0, running: false };

export type QueueStore = ReturnType<typeof createQueueStore>;

/** Start and end times follow status changes; `now` is injected by tests. */
function retime(timing: QueueState['timing'], items: readonly JobItem[], now: number): QueueState['timing'] {
  let next = timing;
  const edit = (id: string, t: { start: number; end?: number }) => {
    if (next === timing) next = { ...timing };
    next[id] = t;
  };
  for (const i of items) {
    const t = timing[i.id];
    if (i.status === 'running' && (!t || t.end !== undefined)) edit(i.id, { start: now });
    else if (t && t.end === undefined && i.status !== 'running') edit(i.id, { start: t.start, end: now });
  }
  return next;
}

export function createQueueStore(initial: QueueSnapshot = EMPTY_QUEUE, now: () => number = Date.now) {
  return createStore<QueueState>()((set) => ({
    queue: initial,
    compareId: null,
    selectedId: null,
    timing: {},
    runStartedAt: null,
    applySnapshot: (queue) =>
      set((s) => ({
        queue,
        // A removed item cannot stay open in the comparison.
        compareId: s.compareId && queue.items.some((i) => i.id === s.compareId) ? s.compareId : null,
        selectedId: s.selectedId && queue.items.some((i) => i.id === s.selectedId) ? s.selectedId : null,
        timing: retime(s.timing, queue.items, now()),
        runStartedAt: queue.running
          ? s.queue.running && s.runStartedAt !== null
            ? s.runStartedAt
            : now()
          : s.runStartedAt,
      })),
    // Item events arrive between snapshots (per-item progress); unknown ids wait for the next snapshot.
    applyItem: (item) =>
      set((s) => {
        const index = s.queue.items.findIndex((i) => i.id === item.id);
        if (index < 0) return s;
        const items = s.queue.items.slice();
        items[index] = item;
        return { queue: { ...s.queue, items }, timing: retime(s.timing, [item], now()) };
      }),
    openCompare: (id) => set({ compareId: id }),
    closeCompare: () => set({ compareId: null }),
    select: (id) => set({ selectedId: id }),
  }));
}

export const selectItems = (s: QueueState) => s.queue.items;
export const selectRunning = (s: QueueState) => s.queue.running;
export const selectCompareItem = (s: QueueState) => s.queue.items.find((i) => i.id === s.compareId) ?? null;
/**
 * The finished result the main pane shows: the one the person chose while it is still done, else the
 * latest to finish (by the end time this page saw; results finished before the page opened count in
 * queue order, before any seen finishing).
 */
export const selectShownResult = (s: QueueState): JobItem | null => {
  const done = s.queue.items.filter((i) => i.status === 'done' && i.outputPath);
  const chosen = s.selectedId ? done.find((i) => i.id === s.selectedId) : undefined;
  if (chosen) return chosen;
  let latest: JobItem | null = null;
  let latestEnd = -Infinity;
  for (const i of done) {
    const end = s.timing[i.id]?.end ?? -Infinity;
    if (latest === null || end >= latestEnd) {
      latest = i;
      latestEnd = end;
    }
  }
  return latest;
};
export const selectHasWaiting = (s: QueueState) => s.queue.items.some((i) => i.status === 'queued');
export const selectCanStart = (s: QueueState) => !s.queue.running && selectHasWaiting(s);
/** Rows "Clear finished" removes: done and skipped (failed and stopped ones stay for Retry). */
export const selectHasClearable = (s: QueueState) =>
  s.queue.items.some((i) => i.status === 'done' || i.status === 'skipped');
/** Done results that exist only in the data folder and were never downloaded: clearing them deletes them. */
export const selectUnsavedIds = (s: QueueState) => s.queue.items.filter((i) => i.unsaved).map((i) => i.id);
export const selectBatch = (s: QueueState) => ({
  finished: s.queue.finished,
  total: s.queue.total,
  percent: s.queue.percent,
  running: s.queue.running,
});
export const selectStopped = (s: QueueState) => s.queue.items.filter((i) => i.status === 'cancelled').length;
export const selectRetryable = (s: QueueState) =>
  s.queue.items.filter((i) => i.status === 'failed' || i.status === 'cancelled').length;
export const selectDoneIds = (s: QueueState) => s.queue.items.filter((i) => i.status === 'done').map((i) => i.id);
/** How long a finished item took, as seen by this page (null when it did not run while the page was open). */
export const selectDuration = (id: string) => (s: QueueState) => {
  const t = s.timing[id];
  return t?.end !== undefined ? t.end - t.start : null;
};
export const selectCreditsDeducted = (s: QueueState) =>
  s.queue.items.reduce((sum, i) => sum + (i.creditsDeducted ?? 0), 0);
