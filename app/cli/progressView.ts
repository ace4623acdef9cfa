/**
 * One progress bar on stderr while a run goes ("N of M", an overall percent that never goes back), only
 * when stderr is a terminal; pipes, CI and --json get none. Loaded lazily with cli-progress.
 */
import cliProgress from 'cli-progress';

export interface ProgressView {
  start(total: number): void;
  update(percent: number, finished: number, total: number, label: string): void;
  /** Clears the bar's line so a result line can be printed; the next update redraws it. */
  clear(): void;
  stop(): void;
}

export function createProgressView(): ProgressView | undefined {
  if (!process.stderr.isTTY) return undefined;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: ' {bar} {percentage}% | {finished} of {total} | {label}',
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let active = false;
  return {
    start(total) {
      bar.start(100, 0, { finished: 0, total, label: '' });
      active = true;
    },
    update(percent, finished, total, label) {
      if (active) bar.update(percent, { finished, total, label });
    },
    clear() {
      if (active) process.stderr.write('\r\u001b[2K');
    },
    stop() {
      if (active) bar.stop();
      active = false;
    },
  };
}
