/**
 * A watched folder: every new or replaced image in it (sub-folders with `recursive`) is upscaled exactly once,
 * after it is complete (arrivals.ts), into the outputs folder (sub-folders mirrored), which is never watched.
 * The folder is looked at every `pollMs` (polling works the same on every OS and on network shares, where
 * change notifications are unreliable). What was done is in the journal (watchJournal.ts), so a restart
 * picks up what arrived while it was down and redoes nothing. One image at a time.
 *
 * Renames: a file is known by its identity too (watchJournal.ts), so one renamed or moved inside the folder is
 * not new work. The upscale reads the image through a hard link in the outputs folder (`.crisp-reading/`), so
 * a rename or move mid-upscale does not pull the file from under it: it finishes under the name it started
 * with, and the new name is skipped. Where no link can be made (another volume, a file system without them), a
 * file gone before its upscale could read it is no failure: it is taken under its new name, once.
 */
import { createHash, randomUUID } from 'node:crypto';
import { link, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileIdentity, isCompleteImage, listCandidates, type SeenFile } from './arrivals.js';
import { WatchJournal, type FileVersion } from './watchJournal.js';
import type { WatchCounts } from './watchTypes.js';
import { CrispError } from '../../engine/contract/index.js';

export type { WatchCounts };

export type WatchEvent =
  | { type: 'done'; input: string; output: string }
  | { type: 'failed'; input: string; error: string }
  | { type: 'counts'; counts: WatchCounts };

export interface FolderWatchOptions {
  dir: string;
  recursive: boolean;
  /** Where outputs go; excluded from watching even when it is inside `dir`. */
  outDir: string;
  /** The output file name for an input (the preset's template). */
  outputName(input: string): string;
  /**
   * Upscales one image into `output` (written atomically by the backend); throws a sentence on failure. The
   * pixels are read from `source`: the same file as `input` (a hard link to it, which a rename cannot move),
   * or `input` itself; `input` names it in outputs and messages.
   */
  upscale(input: string, output: string, signal: AbortSignal, source: string): Promise<void>;
  onEvent?(event: WatchEvent): void;
  /** Default 1000 ms. */
  pollMs?: number;
  /** A file whose container never closes (trailing bytes after a JPEG's end) is taken after this long unchanged. Default 60 s. */
  incompleteAfterMs?: number;
  /**
   * Test-only (never set in production): awaited before the k-th image this watcher upscales (1-based), so a
   * test can hold the watcher at a known point instead of racing it.
   */
  beforeImage?(k: number): Promise<void>;
}

/** A folder that cannot be watched as asked: catalog row watch-refused, told apart by that code. */
export class FolderWatchError extends CrispError {
  override readonly name = 'FolderWatchError';
  constructor(message: string) {
    super('watch-refused', message, { params: { detail: message } });
  }
}

/** Refuses an outputs folder that would be watched itself. */
export function checkWatchFolders(dir: string, outDir: string): void {
  const d = path.resolve(dir);
  const o = path.resolve(outDir);
  if (d === o)
    throw new FolderWatchError(
      `The outputs folder cannot be the watched folder ${d}: choose another with --out (default: ${path.join(d, 'upscaled')}).`,
    );
  const rel = path.relative(o, d);
  if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel))
    throw new FolderWatchError(`The watched folder ${d} is inside the outputs folder ${o}: choose another --out.`);
}

export class FolderWatcher {
  private journal: WatchJournal | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private paused = false;
  private stopped = false;
  private current: AbortController | undefined;
  private loop: Promise<void> | undefined;
  /** Last observation of each file not yet settled: size/time, and since when it has been unchanged. */
  private readonly seen = new Map<string, SeenFile & { since: number }>();
  private readonly written = new Set<string>();
  private started = 0;
  private pendingCount = 0;

  constructor(private readonly opts: FolderWatchOptions) {
    checkWatchFolders(opts.dir, opts.outDir);
  }

  async start(): Promise<void> {
    await mkdir(this.opts.outDir, { recursive: true });
    await this.clearReadingLinks();
    this.journal = await WatchJournal.open(path.join(this.opts.outDir, '.crisp-watch.jsonl'));
    this.schedule(0);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.schedule(0);
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** The latest image that failed (its file name) and why, from the journal: it survives a restart. */
  lastFailure(): { name: string; reason: string } | undefined {
    const f = this.journal?.lastFailure();
    return f ? { name: path.basename(f.rel), reason: f.error } : undefined;
  }

  counts(): WatchCounts {
    return { ...(this.journal?.counts() ?? { done: 0, failed: 0 }), pending: this.pendingCount };
  }

  /** Stops watching; the image being upscaled is cancelled (it is done again on the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.current?.abort();
    await this.loop;
  }

  private schedule(ms: number): void {
    if (this.stopped || this.paused || this.running) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = true;
      this.loop = this.scan()
        .catch(() => undefined)
        .finally(() => {
          this.running = false;
          this.schedule(this.opts.pollMs ?? 1000);
        });
    }, ms);
  }

  /** One look at the folder, then every image found ready, one after another. */
  private async scan(): Promise<void> {
    const journal = this.journal!;
    const now = Date.now();
    const files = await listCandidates(this.opts.dir, this.opts.recursive, [this.opts.outDir]);
    const ready: FileVersion[] = [];
    const present = new Set<string>();
    let pending = 0;
    for (const f of files) {
      if (this.written.has(f.path)) continue;
      const v = this.version(f);
      present.add(f.path);
      if (journal.state(v)) {
        this.seen.delete(f.path);
        continue;
      }
      pending++;
      const before = this.seen.get(f.path);
      const unchanged = before && before.size === f.size && before.mtimeMs === f.mtimeMs;
      this.seen.set(f.path, { ...f, since: unchanged ? before.since : now });
      if (!unchanged) continue;
      if ((await isCompleteImage(f.path)) || now - before.since >= (this.opts.incompleteAfterMs ?? 60_000))
        ready.push(v);
    }
    for (const p of this.seen.keys()) if (!present.has(p)) this.seen.delete(p);
    this.setPending(pending);
    for (const v of ready) {
      if (this.stopped || this.paused) return;
      await this.process(v);
      this.setPending(Math.max(0, this.pendingCount - 1));
    }
  }

  private version(f: SeenFile): FileVersion {
    const rel = path.relative(path.resolve(this.opts.dir), f.path).split(path.sep).join('/');
    return { rel, size: f.size, mtimeMs: f.mtimeMs, ...(f.file ? { file: f.file } : {}) };
  }

  /** Whether `input` is still the version that was handed to the upscale (not renamed, moved or replaced). */
  private async stillThere(input: string, v: FileVersion): Promise<boolean> {
    const st = await stat(input).catch(() => undefined);
    return (
      st !== undefined && st.size === v.size && st.mtimeMs === v.mtimeMs && (fileIdentity(st) ?? v.file) === v.file
    );
  }

  /** This watcher's reading links: `<outputs>/.crisp-reading/<folder hash>-…` (outputs may be shared). */
  private readingDir(): string {
    return path.join(this.opts.outDir, '.crisp-reading');
  }

  private readingPrefix(): string {
    return createHash('sha256').update(path.resolve(this.opts.dir)).digest('hex').slice(0, 12);
  }

  /** What a run that was killed mid-upscale left behind. */
  private async clearReadingLinks(): Promise<void> {
    const prefix = `${this.readingPrefix()}-`;
    for (const name of await readdir(this.readingDir()).catch(() => []))
      if (name.startsWith(prefix)) await rm(path.join(this.readingDir(), name), { force: true });
  }

  /** A hard link to this version of `input`, or undefined where none can be made (or the file changed). */
  private async readingLink(input: string, v: FileVersion): Promise<string | undefined> {
    if (!v.file) return undefined;
    const to = path.join(this.readingDir(), `${this.readingPrefix()}-${randomUUID()}${path.extname(input)}`);
    try {
      await mkdir(this.readingDir(), { recursive: true });
      await link(input, to);
      if (await this.stillThere(to, v)) return to;
    } catch {
      // Another volume, a file system without hard links, or the file went away: read it where it is.
    }
    await rm(to, { force: true });
    return undefined;
  }

  private async process(v: FileVersion): Promise<void> {
    const journal = this.journal!;
    const input = path.join(path.resolve(this.opts.dir), ...v.rel.split('/'));
    const outDir = path.join(this.opts.outDir, path.dirname(v.rel));
    const output = path.join(outDir, this.opts.outputName(input));
    await this.opts.beforeImage?.(++this.started);
    if (this.stopped) return;
    this.written.add(output);
    await mkdir(outDir, { recursive: true });
    await journal.start(v, output);
    const ac = new AbortController();
    this.current = ac;
    const source = await this.readingLink(input, v);
    try {
      await this.opts.upscale(input, output, ac.signal, source ?? input);
    } catch (e) {
      // Stopped: not a failure; the image is upscaled on the next start.
      if (this.stopped || ac.signal.aborted) return;
      // Renamed, moved or replaced before the upscale could read it: not a failure. Under its new name (or as
      // its new version) it is new to the journal and taken on a later look, once.
      if (!(await this.stillThere(input, v))) return;
      const error = e instanceof Error ? e.message : String(e);
      await journal.failed(v, error);
      this.opts.onEvent?.({ type: 'failed', input, error });
      return;
    } finally {
      this.current = undefined;
      if (source) await rm(source, { force: true });
    }
    await journal.done(v, output);
    this.seen.delete(input);
    this.opts.onEvent?.({ type: 'done', input, output });
  }

  private setPending(n: number): void {
    const changed = n !== this.pendingCount;
    this.pendingCount = n;
    if (changed) this.opts.onEvent?.({ type: 'counts', counts: this.counts() });
  }
}
