/**
 * The job queue: inputs, an output folder and name template, an overwrite policy; per-item and
 * whole-batch progress; cancel one or all; retry failed items. Items run in order through an UpscaleBackend,
 * at most one ahead: once an item's model work is done and only its encode and write remain (the backend says
 * so: onEncoding), the next item starts, so its decode and inference overlap that encode (issue 37); a third
 * waits for the first to end. One item's failure never stops the rest. State persists (queueFile) and resumes.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { sanitizeFileName, crispError, hasErrorCode, sizeRequestOf } from '../../engine/contract/index.js';
import { sniffImageType } from '../../engine/core/index.js';
import { writeFileAtomic, Mutex } from '../../engine/service/index.js';
import type { UpscaleBackend } from '../backends/backend.js';
import type { ItemSettings, ItemStatus, JobItem, QueueSnapshot, ServiceEvent } from '../service/crispService.js';
import { probeImage, type ProbeResult } from './imageProbe.js';
import { expandInputs } from './inputs.js';
import { jobOutputName, upscaleSettingsFor, type JobSettings } from './jobSettings.js';
import { prepareOutputFolder } from './outputFolder.js';
import { decideOutput } from './outputNames.js';
import { loadQueueFile, saveQueueFile } from './queueFile.js';
import { guardStep, toUserError } from './userErrors.js';

/** Reading a newly added image's header and structure; a file that takes longer is reported, not waited on. */
const PROBE_TIMEOUT_MS = 30_000;

export type { JobSettings };

export interface JobQueueOptions {
  /** Where the queue persists; none: in memory only (e.g. a one-off CLI batch). */
  stateFile?: string;
  /** Where bytes from addFile are kept (required for addFile). */
  dropsDir?: string;
  /** Asked at the start of each item, so a settings change (mode, key) applies to the next item. */
  backend: () => Promise<UpscaleBackend> | UpscaleBackend;
  /** Read once when a run starts: a run's items share one set of settings. */
  settings: () => Promise<JobSettings> | JobSettings;
  onEvent?: (event: ServiceEvent) => void;
}

const FINISHED: readonly ItemStatus[] = ['done', 'failed', 'cancelled', 'skipped'];
const isFinished = (s: ItemStatus) => FINISHED.includes(s);
/** What "Clear finished" removes: rows with nothing left to do (failed and stopped ones can still be retried). */
const CLEARABLE: readonly ItemStatus[] = ['done', 'skipped'];

/** The row's record of what it ran with (JobItem.madeWith). */
function madeWith(settings: JobSettings): ItemSettings {
  const size = sizeRequestOf(settings);
  return {
    mode: settings.mode ?? 'local',
    model: settings.model,
    scale: settings.scale,
    passes: settings.passes === 2 ? 2 : 1,
    ...(settings.denoise !== undefined ? { denoise: settings.denoise } : {}),
    face: settings.face,
    format: settings.format,
    ...(size ? { size } : {}),
  };
}

export interface ClearResult {
  removed: number;
  /** Done rows kept because their result exists only in the data folder and was never downloaded. */
  keptUnsaved: number;
}

export class JobQueue {
  private items: JobItem[] = [];
  /** Item id → resume token of a task the service already accepted (kept until the item is done). */
  private resume: Record<string, string> = {};
  private readonly controllers = new Map<string, AbortController>();
  private readonly saveLock = new Mutex();
  /** The current (or last) run: its item ids and the highest percent reported, so it never goes back. */
  private run: { ids: Set<string>; peak: number; active: boolean } = { ids: new Set(), peak: 0, active: false };
  private loop: Promise<void> | undefined;
  private closing = false;
  /** Output path → the end of the item writing it: a later item never decides its name before that file is there. */
  private readonly writing = new Map<string, Promise<void>>();
  /** Items already run again once because the engine died while they were only encoding. */
  private readonly crashRetried = new Set<string>();

  private constructor(private readonly opts: JobQueueOptions) {}

  static async open(opts: JobQueueOptions): Promise<JobQueue> {
    const q = new JobQueue(opts);
    if (opts.stateFile) ({ items: q.items, resume: q.resume } = await loadQueueFile(opts.stateFile));
    return q;
  }

  // ---- queries ----

  snapshot(): QueueSnapshot {
    const runItems = this.items.filter((i) => this.run.ids.has(i.id));
    const total = runItems.length;
    const finished = runItems.filter((i) => isFinished(i.status)).length;
    // A stopped image did no lasting work: it counts as 0 %, so Stop with 2 of 5 done never shows 100 %.
    const worked = (i: JobItem) => (i.status === 'cancelled' ? 0 : isFinished(i.status) ? 100 : i.percent);
    const raw = total === 0 ? 0 : Math.floor(runItems.reduce((a, i) => a + worked(i), 0) / total);
    this.run.peak = Math.max(this.run.peak, Math.min(100, raw));
    return {
      items: this.items.map((i) => this.view(i)),
      finished,
      total,
      percent: this.run.peak,
      running: this.run.active,
    };
  }

  get(id: string): JobItem | undefined {
    return this.items.find((i) => i.id === id);
  }

  queuedItems(): JobItem[] {
    return this.items.filter((i) => i.status === 'queued');
  }

  /** Resolves when no run is active. */
  async idle(): Promise<void> {
    while (this.loop) await this.loop;
  }

  // ---- changes ----

  async addPaths(paths: string[], options: { recursive?: boolean } = {}): Promise<JobItem[]> {
    const expanded = await expandInputs(paths, options.recursive ?? false);
    const active = new Set(this.items.filter((i) => !isFinished(i.status)).map((i) => i.inputPath));
    const added: JobItem[] = [];
    for (const e of expanded) {
      if (!e.problem && active.has(e.path)) continue; // already waiting: adding it twice would upscale it twice
      const item: JobItem = {
        id: randomUUID(),
        inputPath: e.path,
        inputName: path.basename(e.path),
        status: e.problem ? 'failed' : 'queued',
        percent: 0,
        ...(e.problem ? { error: e.problem, errorCode: e.problemCode ?? 'not-found' } : {}),
      };
      if (!e.problem) {
        // Probed now, so a broken file is flagged in the queue before any work.
        const probe = await guardStep(probeImage(e.path), { timeoutMs: PROBE_TIMEOUT_MS, what: 'probe' }).catch(
          (): ProbeResult => ({
            ok: false,
            problem: `${path.basename(e.path)} could not be read within ${PROBE_TIMEOUT_MS / 1000} s (the disk or network share may be unresponsive).`,
            code: 'timed-out',
            params: { name: path.basename(e.path) },
          }),
        );
        if (probe.ok) item.inputDimensions = { width: probe.width, height: probe.height };
        else
          Object.assign(item, {
            status: 'failed',
            error: probe.problem,
            errorCode: probe.code,
            errorParams: { ...probe.params },
          });
      }
      active.add(e.path);
      added.push(item);
    }
    this.items.push(...added);
    // Items added while a run is active join it, so "N of M" counts them.
    if (this.run.active) for (const i of added) if (i.status === 'queued') this.run.ids.add(i.id);
    await this.changed();
    return added.map((i) => ({ ...i }));
  }

  async addFile(name: string, bytes: Uint8Array): Promise<JobItem> {
    if (!this.opts.dropsDir) throw new Error('this queue cannot take dropped files');
    if (!sniffImageType(bytes.subarray(0, 16)))
      throw new Error(`${sanitizeFileName(name)} is not a JPG, PNG or WEBP image.`);
    const target = path.join(this.opts.dropsDir, randomUUID(), sanitizeFileName(name));
    await writeFileAtomic(target, bytes);
    const [item] = await this.addPaths([target]);
    if (!item) throw new Error(`${sanitizeFileName(name)} is already in the queue.`);
    return item;
  }

  async remove(id: string): Promise<void> {
    const item = this.get(id);
    if (!item) return;
    if (item.status === 'running') await this.cancel(id);
    this.items = this.items.filter((i) => i.id !== id);
    this.run.ids.delete(id);
    delete this.resume[id];
    await this.removeDrop(item);
    await this.changed();
  }

  /**
   * Removes the finished rows — done and skipped; failed and stopped rows stay, they still need a Retry. A
   * result that lives only in the app's data folder (an upload's output, never downloaded) would be deleted
   * with its row, so such rows stay too unless `discardUnsaved` says the person confirmed it.
   */
  async clearFinished(options: { discardUnsaved?: boolean } = {}): Promise<ClearResult> {
    const clearable = (i: JobItem) => CLEARABLE.includes(i.status);
    const unsaved = this.items.filter((i) => clearable(i) && this.isUnsaved(i));
    const gone = this.items.filter((i) => clearable(i) && (options.discardUnsaved || !this.isUnsaved(i)));
    const goneIds = new Set(gone.map((i) => i.id));
    this.items = this.items.filter((i) => !goneIds.has(i.id));
    for (const i of gone) {
      this.run.ids.delete(i.id);
      delete this.resume[i.id];
      await this.removeDrop(i);
    }
    await this.changed();
    return { removed: gone.length, keptUnsaved: options.discardUnsaved ? 0 : unsaved.length };
  }

  /** The browser UI delivered these results to the person (a download): clearing them no longer loses anything. */
  async markDownloaded(ids: readonly string[]): Promise<void> {
    let changed = false;
    for (const i of this.items) {
      if (ids.includes(i.id) && i.status === 'done' && !i.downloaded) {
        i.downloaded = true;
        changed = true;
      }
    }
    if (changed) await this.changed();
  }

  /** Starts a run over every queued item (no-op when one is active). Resolves once the run has begun. */
  async start(): Promise<void> {
    if (this.run.active || this.closing) return;
    const queued = this.items.filter((i) => i.status === 'queued');
    this.run = { ids: new Set(queued.map((i) => i.id)), peak: 0, active: queued.length > 0 };
    if (!this.run.active) {
      this.emitQueue();
      return;
    }
    const settings = await this.opts.settings();
    this.emitQueue();
    this.loop = this.runLoop(settings).finally(() => {
      this.loop = undefined;
    });
  }

  async cancel(id?: string): Promise<void> {
    const targets = id === undefined ? this.items : this.items.filter((i) => i.id === id);
    for (const item of targets) {
      if (item.status === 'queued') this.setStatus(item, 'cancelled');
      else if (item.status === 'running') this.controllers.get(item.id)?.abort(crispError('cancelled'));
    }
    await this.changed();
  }

  async retry(id?: string): Promise<void> {
    const targets = this.items.filter(
      (i) => (id === undefined || i.id === id) && (i.status === 'failed' || i.status === 'cancelled'),
    );
    for (const item of targets) {
      // A named file that was never an image cannot succeed by retrying.
      if (item.status === 'failed' && !item.inputDimensions) {
        const probe = await probeImage(item.inputPath);
        if (!probe.ok) continue;
        item.inputDimensions = { width: probe.width, height: probe.height };
      }
      item.status = 'queued';
      item.percent = 0;
      delete item.error;
      delete item.errorCode;
      delete item.errorParams;
      if (this.run.active) this.run.ids.add(item.id);
    }
    await this.changed();
    if (!this.run.active) await this.start();
  }

  /** Stops the active item (it will run again after a restart) and writes the state. */
  async close(): Promise<void> {
    this.closing = true;
    for (const c of this.controllers.values()) c.abort(crispError('shutting-down'));
    await this.idle();
    await this.saveLock.run(() => undefined);
  }

  // ---- the run ----

  private async runLoop(settings: JobSettings): Promise<void> {
    // The item before the current one, still encoding; at most one item is ever ahead of an unfinished one.
    let behind: Promise<void> | undefined;
    try {
      for (;;) {
        const item = this.closing ? undefined : this.items.find((i) => i.status === 'queued' && this.run.ids.has(i.id));
        if (!item) break;
        let encoding!: () => void;
        const modelDone = new Promise<void>((resolve) => (encoding = resolve));
        const run = this.runItem(item, settings, encoding);
        await Promise.race([modelDone, run]);
        await behind;
        behind = run;
      }
    } finally {
      await behind;
      this.run.active = false;
      const runItems = this.items.filter((i) => this.run.ids.has(i.id));
      await this.changed();
      this.opts.onEvent?.({
        type: 'batchFinished',
        done: runItems.filter((i) => i.status === 'done').length,
        failed: runItems.filter((i) => i.status === 'failed').length,
        total: runItems.length,
      });
    }
  }

  /** onEncoding: called once this item's model work is done (it then only encodes and writes), or never. */
  private async runItem(item: JobItem, settings: JobSettings, onEncoding: () => void): Promise<void> {
    const controller = new AbortController();
    this.controllers.set(item.id, controller);
    item.status = 'running';
    item.percent = 0;
    delete item.error;
    delete item.errorCode;
    delete item.errorParams;
    delete item.durationMs;
    item.madeWith = madeWith(settings);
    const startedAt = Date.now();
    await this.changed();
    const signal = controller.signal;
    const dir = settings.outputFolder || path.dirname(item.inputPath);
    let markWritten!: () => void;
    const written = new Promise<void>((resolve) => (markWritten = resolve));
    let releaseName = markWritten;
    let pastModel = false;
    try {
      // The folder is made and proven writable before anything runs; each step races Stop and a timeout.
      await prepareOutputFolder(dir, { signal });
      const fileName = jobOutputName(settings, item.inputPath, item.inputDimensions);
      // The item ahead may still be writing this very name: decide as a one-at-a-time run would, i.e. as if it
      // had finished. Skip and rename see its name as taken; replace waits for it, so the later image wins.
      if (settings.overwrite === 'replace') await this.writing.get(path.join(dir, fileName));
      const decision = await guardStep(decideOutput(dir, fileName, settings.overwrite, new Set(this.writing.keys())), {
        signal,
        timeoutMs: 10_000,
        what: `Checking ${dir}`,
      });
      if (decision.action === 'skip') {
        item.outputPath = decision.path;
        this.setStatus(item, 'skipped');
        return;
      }
      this.writing.set(decision.path, written);
      releaseName = () => {
        if (this.writing.get(decision.path) === written) this.writing.delete(decision.path);
        markWritten();
      };
      const backend = await guardStep(Promise.resolve(this.opts.backend()), { signal, what: 'Starting the engine' });
      const out = await guardStep(
        backend.upscale({
          inputPath: item.inputPath,
          inputName: item.inputName,
          settings: upscaleSettingsFor(settings),
          outputPath: decision.path,
          signal,
          onEncoding: () => {
            pastModel = true;
            onEncoding();
          },
          ...(this.resume[item.id] ? { resume: this.resume[item.id] } : {}),
          onResumable: (token) => {
            this.resume[item.id] = token;
            void this.changed();
          },
          onProgress: (p, eta) => {
            if (item.status !== 'running' || (p <= item.percent && (eta === undefined || eta === item.etaSeconds)))
              return;
            item.percent = Math.max(item.percent, Math.min(100, p));
            if (eta !== undefined) item.etaSeconds = eta;
            this.emitItem(item);
          },
        }),
        { signal, what: `Upscaling ${item.inputName}` },
      );
      delete item.etaSeconds;
      item.outputPath = out.outputPath;
      item.outputDimensions = out.dimensions;
      item.fileSize = out.fileSize;
      if (out.warnings.length > 0) item.warnings = out.warnings;
      if (out.faces) item.faces = out.faces;
      if (out.device) item.device = out.device;
      if (backend.mode === 'cloud') item.creditsDeducted = out.creditsDeducted;
      item.percent = 100;
      item.durationMs = Date.now() - startedAt;
      delete this.resume[item.id];
      this.crashRetried.delete(item.id);
      this.setStatus(item, 'done');
    } catch (e) {
      delete item.etaSeconds;
      if (signal.aborted || hasErrorCode(e, 'cancelled', 'shutting-down')) {
        const shutdown = hasErrorCode(signal.reason, 'shutting-down') || hasErrorCode(e, 'shutting-down');
        item.percent = 0;
        // Stopped by a shutdown: queued again so the next start resumes it.
        this.setStatus(item, shutdown ? 'queued' : 'cancelled');
      } else if (pastModel && hasErrorCode(e, 'engine-crashed') && !this.crashRetried.has(item.id)) {
        // The engine died while this image was only encoding, most likely from the next image's work: run it
        // again (once) rather than fail an image for another one's crash.
        this.crashRetried.add(item.id);
        item.percent = 0;
        this.setStatus(item, 'queued');
      } else {
        // The service itself failed the task (nothing was charged): a retry must start a new one.
        if (hasErrorCode(e, 'processing-failed')) delete this.resume[item.id];
        const u = toUserError(e, { path: item.inputName });
        item.error = u.message;
        item.errorCode = u.code;
        if (Object.keys(u.params).length > 0) item.errorParams = { ...u.params };
        this.setStatus(item, 'failed');
      }
    } finally {
      releaseName();
      this.controllers.delete(item.id);
      await this.changed();
      if (this.opts.onEvent) void this.emitAccountLater();
    }
  }

  // ---- plumbing ----

  private setStatus(item: JobItem, status: ItemStatus): void {
    item.status = status;
    this.emitItem(item);
  }

  private emitItem(item: JobItem): void {
    this.opts.onEvent?.({ type: 'item', item: this.view(item) });
    this.emitQueue();
  }

  private emitQueue(): void {
    this.opts.onEvent?.({ type: 'queue', queue: this.snapshot() });
  }

  /** Hook for the service: balance refresh after a cloud item (set by createService). */
  onItemSettled: (() => Promise<void>) | undefined;
  private async emitAccountLater(): Promise<void> {
    await this.onItemSettled?.().catch(() => undefined);
  }

  private async changed(): Promise<void> {
    this.emitQueue();
    const file = this.opts.stateFile;
    if (!file) return;
    const state = { items: this.items.map((i) => ({ ...i })), resume: { ...this.resume } };
    await this.saveLock.run(() => saveQueueFile(file, state));
  }

  /** A done result kept only inside the data folder's drops/ (removed with its row) that was never downloaded. */
  /** A row as the UI sees it: with what only the queue can tell about its files (in the data folder or not). */
  private view(item: JobItem): JobItem {
    return {
      ...item,
      ...(this.isUnsaved(item) ? { unsaved: true } : {}),
      ...(this.inDrops(item.inputPath) ? { dropped: true } : {}),
    };
  }

  private inDrops(file: string): boolean {
    const drops = this.opts.dropsDir;
    return drops !== undefined && path.resolve(file).startsWith(path.resolve(drops) + path.sep);
  }

  private isUnsaved(item: JobItem): boolean {
    const drops = this.opts.dropsDir;
    if (item.status !== 'done' || item.downloaded || !item.outputPath || !drops) return false;
    return path.resolve(item.outputPath).startsWith(path.resolve(drops) + path.sep);
  }

  private async removeDrop(item: JobItem): Promise<void> {
    const drops = this.opts.dropsDir;
    if (drops && path.resolve(item.inputPath).startsWith(path.resolve(drops) + path.sep)) {
      await rm(path.dirname(item.inputPath), { recursive: true, force: true });
    }
  }
}
