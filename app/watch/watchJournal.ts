/**
 * The watch journal: one JSON line per event, appended to `<outputs>/.crisp-watch.jsonl` (a hidden name, so
 * it is never taken for an image). `start` is written before an image is upscaled, `done` / `failed` after.
 * On a restart the journal says what was done (skipped), and an image that was started but not recorded as
 * done counts as done when its output exists and is newer than the start (the process died between writing
 * the output atomically and writing the line), so nothing is upscaled twice.
 *
 * A version is also known by the file itself (device and inode, with its size and time), so a file renamed
 * or moved within the folder, even while it is being upscaled, is the version already done, not new work.
 */
import { appendFile, readFile, stat } from 'node:fs/promises';

/** Identifies one version of an input: a replaced file (other size or time) is new work. */
export interface FileVersion {
  /** Relative to the watched folder, with `/`. */
  rel: string;
  size: number;
  mtimeMs: number;
  /** The file itself (`device:inode`), when the file system has one: unchanged by a rename. */
  file?: string;
}

type Line =
  | ({ event: 'start'; output: string; at: number } & FileVersion)
  | ({ event: 'done'; output: string; at: number } & FileVersion)
  | ({ event: 'failed'; error: string; at: number } & FileVersion);

const key = (v: FileVersion) => `${v.rel}\u0000${v.size}\u0000${v.mtimeMs}`;
/** The same version under any name; undefined where the file system gives no identity. */
const fileKey = (v: FileVersion) => (v.file ? `${v.file}\u0000${v.size}\u0000${v.mtimeMs}` : undefined);

export class WatchJournal {
  private readonly settled = new Map<string, 'done' | 'failed'>();
  /** The same outcomes by the file's identity: a renamed file keeps its outcome. */
  private readonly settledFiles = new Map<string, 'done' | 'failed'>();
  /** The latest failure, read back on open too: the app shows its reason (not only this hidden file). */
  private latestFailure: { rel: string; error: string } | undefined;
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
      if (line.file !== undefined && typeof line.file !== 'string') delete line.file;
      if (line.event === 'start') started.set(key(line), line);
      else {
        started.delete(key(line));
        j.settle(line, line.event);
        if (line.event === 'failed' && typeof line.error === 'string')
          j.latestFailure = { rel: line.rel, error: line.error };
      }
    }
    for (const s of started.values()) {
      const out = await stat(s.output).catch(() => undefined);
      if (out && out.mtimeMs >= s.at - 1000) {
        j.settle(s, 'done');
        await j.append({ ...s, event: 'done', at: Date.now() });
      }
    }
    return j;
  }

  /** done or failed for this version; undefined when it still has to be upscaled. */
  state(v: FileVersion): 'done' | 'failed' | undefined {
    const k = fileKey(v);
    return this.settled.get(key(v)) ?? (k === undefined ? undefined : this.settledFiles.get(k));
  }

  /** The latest image that failed (its path inside the watched folder) and why. */
  lastFailure(): { rel: string; error: string } | undefined {
    return this.latestFailure;
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
    this.settle(v, 'done');
    await this.append({ event: 'done', ...pick(v), output, at: Date.now() });
  }

  async failed(v: FileVersion, error: string): Promise<void> {
    this.settle(v, 'failed');
    this.latestFailure = { rel: v.rel, error };
    await this.append({ event: 'failed', ...pick(v), error, at: Date.now() });
  }

  private settle(v: FileVersion, outcome: 'done' | 'failed'): void {
    this.settled.set(key(v), outcome);
    const k = fileKey(v);
    if (k !== undefined) this.settledFiles.set(k, outcome);
  }

  private append(line: Line): Promise<void> {
    return appendFile(this.file, `${JSON.stringify(line)}\n`);
  }
}

const pick = (v: FileVersion): FileVersion => ({
  rel: v.rel,
  size: v.size,
  mtimeMs: v.mtimeMs,
  ...(v.file ? { file: v.file } : {}),
});
