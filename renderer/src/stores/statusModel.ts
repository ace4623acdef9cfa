/**
 * One truthful status model: the bottom bar, the end-of-batch banner and the queue's header all read
 * their numbers from `countStates` over the same item states, so they cannot contradict each other
 * (a failed or stopped image is never counted as "finished", a cleared queue shows nothing).
 */
import type { ItemStatus, JobItem } from '../../../app/service/crispService.js';

export interface StateCounts {
  waiting: number;
  running: number;
  done: number;
  failed: number;
  stopped: number;
  skipped: number;
  total: number;
}

const KEY: Record<ItemStatus, keyof Omit<StateCounts, 'total'>> = {
  queued: 'waiting',
  running: 'running',
  done: 'done',
  failed: 'failed',
  cancelled: 'stopped',
  skipped: 'skipped',
};

export function countStates(items: readonly Pick<JobItem, 'status'>[]): StateCounts {
  const c: StateCounts = { waiting: 0, running: 0, done: 0, failed: 0, stopped: 0, skipped: 0, total: items.length };
  for (const i of items) c[KEY[i.status]]++;
  return c;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "2 done · 1 failed · 3 waiting": only the states that have items, in the order work flows. */
export function countsText(c: StateCounts): string {
  const parts: string[] = [];
  if (c.running) parts.push(`${c.running} upscaling`);
  if (c.waiting) parts.push(`${c.waiting} waiting`);
  if (c.done) parts.push(`${c.done} done`);
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.stopped) parts.push(`${c.stopped} stopped`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  return parts.join(' · ');
}

/** The bottom bar's sentence. */
export function statusLine(c: StateCounts, running: boolean): string {
  if (c.total === 0) return 'Nothing to do yet: add images to start.';
  if (running) return `Upscaling: ${countsText(c)}`;
  if (c.waiting) return `Ready: ${countsText(c)}`;
  return countsText(c);
}

/** The banner when a run ends; a run ended by Stop says so. */
export function batchSummary(r: { done: number; failed: number; total: number }): { kind: 'error' | 'info'; text: string } {
  const stopped = Math.max(0, r.total - r.done - r.failed);
  const tail = `${r.failed ? `, ${r.failed} failed` : ''}${stopped ? `, ${stopped} stopped` : ''}`;
  return { kind: r.failed ? 'error' : 'info', text: `${stopped ? 'Stopped' : 'Finished'}: ${r.done} of ${plural(r.total, 'image')} upscaled${tail}.` };
}

/** Remaining time from the elapsed time and the batch percent; null until there is something to go on. */
export function etaMs(elapsedMs: number, percent: number): number | null {
  if (percent <= 0 || percent >= 100 || elapsedMs < 1000) return null;
  return (elapsedMs * (100 - percent)) / percent;
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return ms < 10_000 ? `${(Math.max(0, ms) / 1000).toFixed(1)} s` : `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}
