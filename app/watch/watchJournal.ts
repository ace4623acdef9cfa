/**
 * The watch journal: one JSON line per event, appended to `<outputs>/.crisp-watch.jsonl` (a hidden name, so
 * it is never taken for an image). `start` is written before an image is upscaled, `done` / `failed` after.
 * On a restart the journal says what was done (skipped), and an image that was started but not recorded as
 * done counts as done when its output exists and is newer than the start (the process died between writing
 * the output atomically and writing the line), so nothing is upscaled twice.
 */
import { appendFile, readFile, stat } from 'node:fs/promises';

/** Identifies one version of an input: a replaced file (other size or time) is new work. */
export interface FileVersion {
  /** Relative to the watched folder, with `/`. */
  rel: string;
  size: number;
  mtimeMs: number;
}

type Line =
  | ({ event: 'start'; output: string; at: number } & FileVersion)
  | ({ event: 'done'; output: string; at: number } & FileVersion)
  | ({ event: 'failed'; error: string; at: number } & FileVersion);

const key = (v: FileVersion) => `${v.rel}\u0000${v.size}\u0000${v.mtimeMs}`;

export class WatchJournal {
  private readonly settled = new Map<string, 'done' | 'failed'>();
  private constructor(private readonly file: string) {}

  static async open(file: string): Promise<WatchJournal> {
    const j = new WatchJournal(file);
    const text = await readFile(file, 'utf8').catch(() => '');
    const started = new Map<string, Extract<Line, { event: 'start' }>>();
    for (const raw of text.split('\n')) {
      if (!raw.trim()) continue;
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        continue; // a line cut short by a crash
      }
      if (typeof line?.rel !== 'string') continue;
      if (line.event === 'start') started.set(key(line), line);
      else {
        started.delete(key(line));
        j.settled.set(key(line), line.event);
      }
    }
    for (const [k, s] of started) {
      const out = await stat(s.output).catch(() => undefined);
      if (out && out.mtimeMs >= s.at - 1000) {
        j.settled.set(k, 'done');
        await j.append({ ...s, event: 'done', at: Date.now() });
      }
    }
    return j;
  }

  /** done or failed for this version; undefined when it still has to be upscaled. */
  state(v: FileVersion): 'done' | 'failed' | undefined {
    return this.settled.get(key(v));
  }

  counts(): { done: number; failed: number } {
    let done = 0;
    let failed = 0;
    for (const s of this.settled.values())
      if (s === 'done') done++;
      else failed++;
    return { done, failed };
  }

  async start(v: FileVersion, output: string): Promise<void> {
    await this.append({ event: 'start', ...pick(v), output, at: Date.now() });
  }

  async done(v: FileVersion, output: string): Promise<void> {
    this.settled.set(key(v), 'done');
    await this.append({ event: 'done', ...pick(v), output, at: Date.now() });
  }

  async failed(v: FileVersion, error: string): Promise<void> {
    this.settled.set(key(v), 'failed');
    await this.append({ event: 'failed', ...pick(v), error, at: Date.now() });
  }

  private append(line: Line): Promise<void> {
    return appendFile(this.file, `${JSON.stringify(line)}\n`);
  }
}

const pick = (v: FileVersion): FileVersion => ({ rel: v.rel, size: v.size, mtimeMs: v.mtimeMs });
