/** Plain-words labels shared by the components. */
import type { ItemStatus, JobItem } from '../../app/service/crispService.js';

export function statusLabel(item: JobItem): string {
  const labels: Record<ItemStatus, string> = {
    queued: 'Waiting',
    running: `Upscaling… ${Math.round(item.percent)}%`,
    done: 'Done',
    failed: 'Failed',
    cancelled: 'Stopped',
    skipped: 'Skipped (the output already exists)',
  };
  return labels[item.status];
}

export function dimensions(d: { width: number; height: number } | undefined): string {
  return d ? `${d.width}×${d.height}` : '';
}

export function credits(n: number): string {
  return `${n} credit${n === 1 ? '' : 's'}`;
}

export function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}
