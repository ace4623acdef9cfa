/** Labels shared by the components, in the caller's language (English when none is given). */
import type { ItemStatus, JobItem } from '../../app/service/crispService.js';
import { EN, type Translator } from './i18n/index.js';
import type { MessageKey } from './i18n/catalog.js';

const STATUS_KEYS: Record<ItemStatus, MessageKey> = {
  queued: 'status.queued',
  running: 'status.running',
  done: 'status.done',
  failed: 'status.failed',
  cancelled: 'status.cancelled',
  skipped: 'status.skipped',
};

export function statusLabel(item: JobItem, tr: Translator = EN): string {
  return tr.t(STATUS_KEYS[item.status], { percent: tr.percent(item.percent) });
}

export function dimensions(d: { width: number; height: number } | undefined): string {
  return d ? `${d.width}×${d.height}` : '';
}

export function credits(n: number, tr: Translator = EN): string {
  return tr.t('credits.amount', { n });
}
