/** A progress bar on stderr when it is a terminal; silent otherwise (pipes, CI, --json). */
import cliProgress from 'cli-progress';

export interface ProgressView {
  update(label: string, percent: number): void;
  done(): void;
  stop(): void;
}

export function createProgressView(total: number): ProgressView | undefined {
  if (!process.stderr.isTTY || total === 0) return undefined;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: ' {bar} {percentage}% | {label} ({index}/{total})',
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let index = 1;
  bar.start(100, 0, { label: '', index, total });
  return {
    update: (label, percent) => bar.update(percent, { label, index, total }),
    done: () => {
      index = Math.min(total, index + 1);
      bar.update(0, { index });
    },
    stop: () => bar.stop(),
  };
}
