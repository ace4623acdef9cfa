/**
 * createService: the CrispService used by Electron's main process and by `crisp ui`'s bridge. It only
 * composes: one module per subject of the method table (settings, models, queue, results, credits), each
 * typed as exactly its slice of CrispService, so a missing or extra method is a compile error here.
 */
import path from 'node:path';
import { loadModelCatalog, modelSearchDirs, userModelsDir } from '../../engine/core/index.js';
import type { WorkerSpawner } from '../backends/local/workerSpawner.js';
import { jobSettingsFrom } from '../jobs/jobSettings.js';
import { JobQueue, type JobSettings } from '../jobs/jobQueue.js';
import type { RemoteBackendOptions } from '../remote/remoteBackend.js';
import type { SecretStore } from '../secrets/secretStore.js';
import { openSettingsStore } from '../settings/settingsStore.js';
import { createBackendSelection, type BackendFactory } from './backendSelection.js';
import { creditMethods } from './creditMethods.js';
import type { CrispService, Settings } from './crispService.js';
import type { SubjectService } from './methodTable.js';
import { modelMethods, type ModelDownloadOptions } from './modelMethods.js';
import { queueMethods } from './queueMethods.js';
import { resultMethods, type DesktopShell } from './resultMethods.js';
import { createServiceEvents } from './serviceEvents.js';
import { settingsMethods } from './settingsMethods.js';
import { presetMethods } from './presetMethods.js';
import { watchMethods } from './watchMethods.js';
import { WatchManager } from '../watch/watchManager.js';
import { defaultPresetsFile, openPresetStore } from '../settings/presetStore.js';

export type { ModelDownloadOptions } from './modelMethods.js';

export interface ServiceDeps extends DesktopShell {
  /** The app's data folder: settings.json, queue.json, drops/ (pasted files), engine/ (worker data). */
  dataDir: string;
  secrets: SecretStore;
  /** Electron passes a utilityProcess spawner; default: child_process.fork with tsx's loader. */
  spawner?: WorkerSpawner;
  /** Model search folders for local mode (default: the engine's). */
  modelDirs?: string[];
  /** Tuning of the remote backend (tests shorten poll intervals). */
  remote?: Partial<Omit<RemoteBackendOptions, 'baseUrl' | 'apiKey'>>;
  /** Defaults for a first start (e.g. the CLI's --remote URL). */
  settingsDefaults?: Partial<Settings>;
  /**
   * The user's models folder: where downloadModel installs and where imported (custom) models are read
   * from (<modelsDir>/custom). Default: the engine's userModelsDir(). Always searched by the local backend.
   */
  modelsDir?: string;
  /** Model downloads: injected for tests (a local server) and proxies. */
  download?: ModelDownloadOptions;
  /** Quiet period before a change in the custom models folder is reported (default 300 ms). */
  modelsWatchDebounceMs?: number;
  /** Test doubles only: makes the backend (default: local worker or remote service). */
  backendFactory?: BackendFactory;
  /** The presets file shared with the command line (default: presets.json in the user's Crisp data folder). */
  presetsFile?: string;
  /** How often watched folders are looked at (default 1000 ms; tests shorten it). */
  watchPollMs?: number;
  /** Test doubles only: a scripted models subject instead of the catalog on disk. */
  models?: SubjectService<'models'>;
}

export interface ServiceHandle extends CrispService {
  /** Browser UI: these results were downloaded (see JobItem.unsaved); not part of the wire API. */
  markDownloaded(ids: readonly string[]): Promise<void>;
  /** Stops the running item (it resumes on the next start), the worker, and flushes state. */
  close(): Promise<void>;
}

/** The slice of the settings one run uses. The denoise extension exists for one model, and only the local engine is known to accept it. */
export const toJobSettings = (s: Settings): JobSettings => jobSettingsFrom(s, s.mode);

export async function createService(deps: ServiceDeps): Promise<ServiceHandle> {
  const modelsDir = path.resolve(deps.modelsDir ?? userModelsDir());
  // Downloads land in modelsDir, so the local backend must search it (after any folder given first).
  const modelDirs = [...new Set([...(deps.modelDirs ?? modelSearchDirs()), modelsDir])];
  // A first start picks the best installed photo model, as the CLI does; a saved choice always wins.
  const { defaultModel } = await loadModelCatalog();
  const settings = await openSettingsStore(path.join(deps.dataDir, 'settings.json'), {
    model: defaultModel(modelDirs),
    ...deps.settingsDefaults,
  });
  const events = createServiceEvents();
  const backends = createBackendSelection({
    dataDir: deps.dataDir,
    secrets: deps.secrets,
    modelDirs,
    modelsDir,
    ...(deps.spawner ? { spawner: deps.spawner } : {}),
    ...(deps.remote ? { remote: deps.remote } : {}),
    ...(deps.backendFactory ? { factory: deps.backendFactory } : {}),
  });

  const queue = await JobQueue.open({
    stateFile: path.join(deps.dataDir, 'queue.json'),
    dropsDir: path.join(deps.dataDir, 'drops'),
    backend: async () => backends.backendFor(await settings.get()),
    settings: async () => toJobSettings(await settings.get()),
    onEvent: events.emit,
  });
  const presets = openPresetStore(deps.presetsFile ?? defaultPresetsFile());
  const watches = await WatchManager.open({
    file: path.join(deps.dataDir, 'watches.json'),
    presets,
    settings: () => settings.get(),
    backend: (s) => backends.backendFor(s),
    onChange: (list) => events.emit({ type: 'watches', watches: list }),
    // A Cloud folder's image was charged: the balance is shown live, whatever mode the app is in.
    onSpent: () =>
      void (async () => {
        const backend = await backends.backendFor({ ...(await settings.get()), mode: 'cloud' });
        events.emit({ type: 'account', account: await backend.getAccount() });
      })().catch(() => undefined),
    ...(deps.watchPollMs ? { pollMs: deps.watchPollMs } : {}),
  });
  const credits = creditMethods(settings, queue, backends.backendFor);
  queue.onItemSettled = async () => {
    if ((await settings.get()).mode !== 'cloud') return;
    events.emit({ type: 'account', account: await credits.getAccount() });
  };
  const models = deps.models
    ? { methods: deps.models, close: () => undefined }
    : modelMethods({
        settings,
        events,
        modelDirs,
        modelsDir,
        scratchDir: path.join(deps.dataDir, 'imports'),
        previewsDir: path.join(deps.dataDir, 'previews'),
        inputOf: async (id) => queue.snapshot().items.find((i) => i.id === id)?.inputPath,
        async cloudFaceEnhancement() {
          try {
            return (await (await backends.backendFor(await settings.get())).faceEnhancement?.()) ?? null;
          } catch {
            // No service URL or key yet: the Cloud card says so; the toggle simply stays as the service would decide.
            return null;
          }
        },
        async cloudModels() {
          try {
            return (await (await backends.backendFor(await settings.get())).offeredModels?.()) ?? null;
          } catch {
            // No service URL or key yet: every contract model is listed, as before a connection.
            return null;
          }
        },
        async renderPreview(model, input, output) {
          // Always the local engine (a preview shows what this computer's copy of the model does).
          const backend = await backends.backendFor({ ...(await settings.get()), mode: 'local' });
          await backend.upscale({
            inputPath: input,
            inputName: 'preview-sample.png',
            settings: { model, scale: 4, saveImageAs: 'png', compression: 0 },
            outputPath: output,
          });
        },
        ...(deps.openFolder ? { openFolder: deps.openFolder } : {}),
        ...(deps.download ? { download: deps.download } : {}),
        ...(deps.modelsWatchDebounceMs !== undefined ? { watchDebounceMs: deps.modelsWatchDebounceMs } : {}),
      });

  return {
    ...settingsMethods(settings, deps.secrets, events, async () => {
      // Always the local engine: the list describes this computer whatever the mode.
      const backend = await backends.backendFor({ ...(await settings.get()), mode: 'local' });
      return (await backend.devices?.()) ?? [];
    }),
    ...presetMethods(presets, settings, events),
    ...watchMethods(watches),
    ...models.methods,
    ...queueMethods(queue),
    ...resultMethods(queue, deps),
    ...credits,
    subscribe: events.subscribe,
    markDownloaded: (ids) => queue.markDownloaded(ids),
    async close() {
      await watches.close();
      models.close();
      await queue.close();
      await backends.close();
      events.clear();
    },
  };
}
