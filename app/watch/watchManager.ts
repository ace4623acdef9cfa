/**
 * The desktop app's watched folders: a list (watches.json in the app's data folder), each with a preset, an
 * outputs folder and paused or not, each run by a FolderWatcher through the app's backend. Counts (done,
 * failed, pending) come from each watcher's journal, so they survive a restart of the app.
 */
import { randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { writeJsonAtomic, Mutex } from '../../engine/service/index.js';
import type { UpscaleBackend } from '../backends/backend.js';
import { estimateCredits } from '../credits/estimate.js';
import { jobOutputName, jobSettingsFrom, upscaleSettingsFor } from '../jobs/jobSettings.js';
import type { PresetStore } from '../settings/presetStore.js';
import type { PresetOptions } from '../settings/presets.js';
import type { Settings } from '../settings/settingsSchema.js';
import { UPSCALE_DEFAULTS } from '../settings/upscaleOptions.js';
import { checkWatchFolders, FolderWatcher, FolderWatchError } from './folderWatcher.js';
import type { NewWatch, WatchedFolder, WatchMode, WatchView } from './watchTypes.js';

export type { NewWatch, WatchedFolder, WatchMode, WatchView };

const storedSchema = z.array(
  z.object({
    id: z.string().min(1).max(100),
    dir: z.string().min(1).max(4096),
    preset: z.string().min(1).max(200),
    outDir: z.string().min(1).max(4096),
    recursive: z.boolean(),
    paused: z.boolean(),
    // Folders saved before a watch chose where it runs ran locally by default.
    mode: z.enum(['local', 'cloud']).default('local'),
    spendAllowed: z.boolean().default(false),
  }),
);

export interface WatchManagerDeps {
  file: string;
  presets: PresetStore;
  settings: () => Promise<Settings>;
  backend: (settings: Settings) => Promise<UpscaleBackend>;
  onChange: (watches: WatchView[]) => void;
  /** A Cloud folder's image was charged (the balance changed). */
  onSpent?: () => void;
  /** Default 1000 ms (tests shorten it). */
  pollMs?: number;
}

export class WatchManager {
  private list: WatchedFolder[] = [];
  private readonly running = new Map<string, FolderWatcher>();
  private readonly problems = new Map<string, string>();
  private readonly costs = new Map<string, number>();
  /** Cloud folders whose arrived image waits for spending to be allowed: the wake-up of that wait. */
  private readonly awaiting = new Map<string, () => void>();
  private readonly lock = new Mutex();

  private constructor(private readonly deps: WatchManagerDeps) {}

  static async open(deps: WatchManagerDeps): Promise<WatchManager> {
    const m = new WatchManager(deps);
    const raw = await readFile(deps.file, 'utf8').then(
      (t) => JSON.parse(t) as unknown,
      () => [],
    );
    const r = storedSchema.safeParse(raw);
    m.list = r.success ? r.data : [];
    for (const w of m.list) await m.run(w);
    return m;
  }

  views(): WatchView[] {
    return this.list.map((w) => {
      const failure = this.running.get(w.id)?.lastFailure();
      return {
        ...w,
        counts: this.running.get(w.id)?.counts() ?? { done: 0, failed: 0, pending: 0 },
        ...(this.problems.has(w.id) ? { problem: this.problems.get(w.id)! } : {}),
        ...(w.mode === 'cloud' && this.costs.has(w.id) ? { creditsPerImage: this.costs.get(w.id)! } : {}),
        ...(this.awaiting.has(w.id) ? { awaitingApproval: true } : {}),
        ...(failure ? { lastFailure: failure } : {}),
      };
    });
  }

  add(req: NewWatch): Promise<WatchView> {
    return this.lock.run(async () => {
      const dir = path.resolve(req.dir);
      if (!path.isAbsolute(req.dir))
        throw new FolderWatchError(`The folder to watch must be a full path, not "${req.dir}".`);
      if (!(await stat(dir).catch(() => undefined))?.isDirectory())
        throw new FolderWatchError(`${dir} is not a folder: choose a folder to watch.`);
      if (this.list.some((w) => w.dir === dir)) throw new FolderWatchError(`${dir} is already watched.`);
      const preset = await this.deps.presets.get(req.preset);
      const outDir = path.resolve(req.outDir || preset.options.outputFolder || path.join(dir, 'upscaled'));
      checkWatchFolders(dir, outDir);
      const w: WatchedFolder = {
        id: randomUUID(),
        dir,
        preset: preset.name,
        outDir,
        recursive: Boolean(req.recursive),
        paused: false,
        mode: req.mode === 'cloud' ? 'cloud' : 'local',
        // Asked once, in the app, before the first image is sent (the service charges per image).
        spendAllowed: false,
      };
      this.list.push(w);
      await this.save();
      await this.run(w);
      this.changed();
      return this.views().find((v) => v.id === w.id)!;
    });
  }

  remove(id: string): Promise<void> {
    return this.lock.run(async () => {
      this.find(id);
      await this.halt(id);
      this.list = this.list.filter((w) => w.id !== id);
      await this.save();
      this.changed();
    });
  }

  setPaused(id: string, paused: boolean): Promise<WatchView> {
    return this.lock.run(async () => {
      const w = this.find(id);
      w.paused = paused;
      const watcher = this.running.get(id);
      if (!watcher) await this.run(w);
      else if (paused) watcher.pause();
      else watcher.resume();
      await this.save();
      this.changed();
      return this.views().find((v) => v.id === id)!;
    });
  }

  /** Cloud: the person allows this folder to spend credits; a waiting image goes at once. */
  allowSpending(id: string): Promise<WatchView> {
    return this.lock.run(async () => {
      const w = this.find(id);
      w.spendAllowed = true;
      await this.save();
      this.awaiting.get(id)?.();
      this.changed();
      return this.views().find((v) => v.id === id)!;
    });
  }

  async close(): Promise<void> {
    for (const id of [...this.running.keys()]) await this.halt(id);
  }

  private find(id: string): WatchedFolder {
    const w = this.list.find((x) => x.id === id);
    if (!w) throw new FolderWatchError('That folder is not watched (any more).');
    return w;
  }

  private async run(w: WatchedFolder): Promise<void> {
    this.problems.delete(w.id);
    try {
      const preset = await this.deps.presets.get(w.preset);
      const watcher = new FolderWatcher({
        dir: w.dir,
        recursive: w.recursive,
        outDir: w.outDir,
        ...(this.deps.pollMs ? { pollMs: this.deps.pollMs } : {}),
        outputName: (input) => jobOutputName(this.jobSettings(preset.options, 'local'), input),
        upscale: async (input, output, signal, source) => {
          // Nothing is sent to a service before the person allowed this folder to spend (asked once).
          if (w.mode === 'cloud' && !w.spendAllowed) await this.approval(w, signal);
          const s = { ...(await this.deps.settings()), mode: w.mode };
          const job = this.jobSettings(preset.options, w.mode);
          const out = await (
            await this.deps.backend(s)
          ).upscale({
            inputPath: source,
            inputName: path.basename(input),
            settings: upscaleSettingsFor(job),
            outputPath: output,
            signal,
          });
          if (w.mode === 'cloud' && out.creditsDeducted > 0) this.deps.onSpent?.();
        },
        onEvent: () => this.changed(),
      });
      // A paused folder's watcher is made too: its journal gives the counts; it looks at nothing until resumed.
      if (w.mode === 'cloud')
        this.costs.set(
          w.id,
          estimateCredits('cloud', upscaleSettingsFor(this.jobSettings(preset.options, 'cloud')), 1).credits,
        );
      if (w.paused) watcher.pause();
      await watcher.start();
      this.running.set(w.id, watcher);
    } catch (e) {
      this.problems.set(w.id, e instanceof Error ? e.message : String(e));
    }
  }

  /** Waits until spending is allowed for this folder (or the watch stops: the image then waits for next time). */
  private approval(w: WatchedFolder, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.awaiting.delete(w.id);
        signal.removeEventListener('abort', stop);
        this.changed();
      };
      const stop = () => {
        done();
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      this.awaiting.set(w.id, () => {
        done();
        resolve();
      });
      signal.addEventListener('abort', stop, { once: true });
      this.changed();
    });
  }

  private jobSettings(options: PresetOptions, mode: Settings['mode']) {
    // A replaced input replaces its output: the same image, a newer version.
    return jobSettingsFrom({ ...UPSCALE_DEFAULTS, ...options, overwrite: 'replace' }, mode);
  }

  private async halt(id: string): Promise<void> {
    const watcher = this.running.get(id);
    this.running.delete(id);
    await watcher?.stop();
  }

  private save(): Promise<void> {
    return writeJsonAtomic(this.deps.file, this.list);
  }

  private changed(): void {
    this.deps.onChange(this.views());
  }
}
