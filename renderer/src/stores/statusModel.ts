/**
 * One truthful status model: the bottom bar, the end-of-batch banner and the queue's header all read
 * their numbers from `countStates` over the same item states, so they cannot contradict each other
 * (a failed or stopped image is never counted as "finished", a cleared queue shows nothing).
 */
import type { ItemStatus, JobItem } from '../../../app/service/crispService.js';
import { EN, type Translator } from '../i18n/index.js';

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

/** "2 done · 1 failed · 3 waiting": only the states that have items, in the order work flows. */
export function countsText(c: StateCounts, tr: Translator = EN): string {
  const parts: string[] = [];
  if (c.running) parts.push(tr.t('counts.running', { n: c.running }));
  if (c.waiting) parts.push(tr.t('counts.waiting', { n: c.waiting }));
  if (c.done) parts.push(tr.t('counts.done', { n: c.done }));
  if (c.failed) parts.push(tr.t('counts.failed', { n: c.failed }));
  if (c.stopped) parts.push(tr.t('counts.stopped', { n: c.stopped }));
  if (c.skipped) parts.push(tr.t('counts.skipped', { n: c.skipped }));
  return parts.join(tr.t('counts.separator'));
}

/** The bottom bar's sentence; `blocked` (why nothing can start) replaces "Ready" while images wait. */
export function statusLine(
  c: StateCounts,
  running: boolean,
  tr: Translator = EN,
  blocked: string | null = null,
): string {
  if (c.total === 0) return tr.t('line.empty');
  if (running) return tr.t('line.running', { counts: countsText(c, tr) });
  if (c.waiting && blocked) return tr.t('line.blocked', { reason: blocked, counts: countsText(c, tr) });
  if (c.waiting) return tr.t('line.ready', { counts: countsText(c, tr) });
  return countsText(c, tr);
}

/** The banner when a run ends; a run ended by Stop says so. */
export function batchSummary(
  r: { done: number; failed: number; total: number },
  tr: Translator = EN,
): { kind: 'error' | 'info'; text: string } {
  const stopped = Math.max(0, r.total - r.done - r.failed);
  const tail = `${r.failed ? tr.t('summary.failedTail', { n: r.failed }) : ''}${stopped ? tr.t('summary.stoppedTail', { n: stopped }) : ''}`;
  return {
    kind: r.failed ? 'error' : 'info',
    text: tr.t(stopped ? 'summary.stopped' : 'summary.finished', { done: r.done, n: r.total, tail }),
  };
}

/** Remaining time from the elapsed time and the batch percent; null until there is something to go on. */
export function etaMs(elapsedMs: number, percent: number): number | null {
  if (percent <= 0 || percent >= 100 || elapsedMs < 1000) return null;
  return (elapsedMs * (100 - percent)) / percent;
}

export function formatDuration(ms: number, tr: Translator = EN): string {
  return tr.duration(ms);
}
