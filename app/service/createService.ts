/**
 * createService: the CrispService implementation used by Electron's main process and by `crisp ui`'s
 * bridge. It composes settings (settingsStore), the API key (SecretStore), the job queue (jobs/) and the
 * backend the settings choose (local worker process or remote service), and fans events out to
 * subscribers.
 */
import { watch, watchFile, unwatchFile, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Dispatcher } from 'undici';
import { DENOISE_MODEL, MODEL_NAMES, isModelName } from '../../engine/contract/index.js';
import { defaultModel, listModels as listCatalogModels, loadCatalog, modelSearchDirs, userModelsDir, type CatalogEntry } from '../../engine/models/catalog.js';
import { CUSTOM_REGISTRY, customModelsDir, listCustomModels } from '../../engine/models/customModels.js';
import { fetchModel, type FetchTarget } from '../../engine/models/fetch.js';
import { customModelName } from '../../engine/models/taskModel.js';
import { sniffImageType } from '../../engine/storage/imageSniff.js';
import { FACE_MODELS, installedFaceModels } from '../../engine/faces/faceModels.js';
import type { UpscaleBackend } from '../backends/backend.js';
import { BadRequestError, UnauthorizedError } from '../backends/errors.js';
import { createLocalBackend } from '../backends/local/localBackend.js';
import type { WorkerSpawner } from '../backends/local/workerSpawner.js';
import { estimateCredits } from '../credits/estimate.js';
import { JobQueue, type JobSettings } from '../jobs/jobQueue.js';
import { createRemoteBackend, type RemoteBackendOptions } from '../remote/remoteBackend.js';
import { API_KEY_SECRET, type SecretStore } from '../secrets/secretStore.js';
import { openSettingsStore } from '../settings/settingsStore.js';
import type { AccountView, CrispService, ModelInfo, ServiceEvent, Settings } from './crispService.js';

export interface ServiceDeps {
  /** The app's data folder: settings.json, queue.json, drops/ (pasted files), engine/ (worker data). */
  dataDir: string;
  secrets: SecretStore;
  /** Electron passes a utilityProcess spawner; default: child_process.fork with tsx's loader. */
  spawner?: WorkerSpawner;
  /** Model search folders for local mode (default: the engine's). */
  modelDirs?: string[];
  /** Desktop: show a file in the file manager. Absent (browser UI): revealOutput answers false. */
  revealOutput?: (outputPath: string) => boolean | Promise<boolean>;
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
}

export interface ModelDownloadOptions {
  /** Where and what to fetch for a catalog entry (default: the entry's own download spec). */
  target?: (entry: CatalogEntry) => FetchTarget;
  dispatcher?: Dispatcher;
  connectTimeoutMs?: number;
}

/** Progress events at most this often per download (the final one is always sent). */
const DOWNLOAD_EVENT_INTERVAL_MS = 100;

export interface ServiceHandle extends CrispService {
  /** Stops the running item (it resumes on the next start), the worker, and flushes state. */
  close(): Promise<void>;
}

const MIME_OF_EXT: Record<string, string> = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp' };

export async function createService(deps: ServiceDeps): Promise<ServiceHandle> {
  const modelsDir = path.resolve(deps.modelsDir ?? userModelsDir());
  // Downloads land in modelsDir, so the local backend must search it (after any folder given first).
  const modelDirs = [...new Set([...(deps.modelDirs ?? modelSearchDirs()), modelsDir])];
  // A first start picks the best installed photo model, as the CLI does; a saved choice always wins.
  const settings = await openSettingsStore(path.join(deps.dataDir, 'settings.json'), { model: defaultModel(modelDirs), ...deps.settingsDefaults });
  const listeners = new Set<(e: ServiceEvent) => void>();
  const emit = (e: ServiceEvent) => {
    for (const l of listeners) {
      try {
        l(e);
      } catch {
        // A faulty listener must not break the queue or the other listeners.
      }
    }
  };

  let cached: { key: string; backend: UpscaleBackend } | undefined;
  async function backendFor(s: Settings): Promise<UpscaleBackend> {
    let key: string;
    let make: () => UpscaleBackend;
    if (s.mode === 'local') {
      key = JSON.stringify(['local', s.executionProvider, s.threads, s.tileSize, s.face, s.faceModel, s.faceStrength]);
      make = () =>
        createLocalBackend({
          dataDir: path.join(deps.dataDir, 'engine'),
          modelDirs,
          customModelsDir: modelsDir,
          executionProvider: s.executionProvider,
          ...(s.threads ? { threads: s.threads } : {}),
          ...(s.tileSize ? { tileSize: s.tileSize } : {}),
          ...(s.face ? { faces: { model: s.faceModel || null, strength: s.faceStrength } } : {}),
          ...(deps.spawner ? { spawner: deps.spawner } : {}),
        });
    } else {
      const apiKey = await deps.secrets.get(API_KEY_SECRET);
      if (!s.baseUrl) throw new BadRequestError('No service URL is set: choose one in Settings.');
      if (!apiKey) throw new UnauthorizedError('No API key is set: add your key in Settings.');
      // The key is part of the cache identity but never stored in a readable form elsewhere.
      key = JSON.stringify(['cloud', s.baseUrl, apiKey]);
      make = () => createRemoteBackend({ ...deps.remote, baseUrl: s.baseUrl, apiKey });
    }
    if (cached?.key !== key) {
      const old = cached?.backend;
      cached = { key, backend: make() };
      void old?.close();
    }
    return cached.backend;
  }

  const toJobSettings = (s: Settings): JobSettings => ({
    // The denoise extension exists for one model, and only the local engine is known to accept it.
    ...(s.mode === 'local' && s.model === DENOISE_MODEL ? { denoise: s.denoise } : {}),
    model: s.model,
    scale: s.scale,
    format: s.format,
    compression: s.compression,
    face: s.face,
    outputFolder: s.outputFolder,
    template: s.template,
    overwrite: s.overwrite,
  });

  async function getAccount(): Promise<AccountView> {
    const s = await settings.get();
    if (s.mode === 'local') return { available: false };
    return (await backendFor(s)).getAccount();
  }

  const queue = await JobQueue.open({
    stateFile: path.join(deps.dataDir, 'queue.json'),
    dropsDir: path.join(deps.dataDir, 'drops'),
    backend: async () => backendFor(await settings.get()),
    settings: async () => toJobSettings(await settings.get()),
    onEvent: emit,
  });
  queue.onItemSettled = async () => {
    if ((await settings.get()).mode !== 'cloud') return;
    emit({ type: 'account', account: await getAccount() });
  };

  async function localModels(): Promise<ModelInfo[]> {
    const catalog: ModelInfo[] = listCatalogModels(modelDirs).map((m) => ({
      name: m.name,
      title: m.title,
      description: m.description,
      kind: m.kind,
      scale: m.scale,
      installed: m.installed,
      licence: m.licence,
    }));
    let custom: ModelInfo[] = [];
    try {
      custom = (await listCustomModels(modelsDir)).map((m) => ({
        name: customModelName(m.name),
        title: m.name,
        description: `Imported from ${m.source} (${m.description}).`,
        kind: 'custom',
        scale: m.scale,
        installed: true,
        licence: 'as imported',
      }));
    } catch {
      // A damaged registry must not hide the catalog; "crisp models list" reports the damage.
    }
    // Face restorers ride along as kind 'face' so the UI can tell whether "Enhance faces" can work.
    const faces: ModelInfo[] = installedFaceModels(modelDirs).map((m) => ({
      name: m.name,
      title: m.name,
      description: 'Face restorer for "Enhance faces".',
      kind: 'face',
      scale: 1,
      installed: true,
      licence: FACE_MODELS.find((e) => e.name === m.name)?.licence ?? 'as imported',
    }));
    return [...catalog, ...custom, ...faces];
  }

  // Custom models folder: watched so an import (from the CLI or anywhere) shows up in the picker.
  const customDir = customModelsDir(modelsDir);
  const registryFile = path.join(customDir, CUSTOM_REGISTRY);
  const debounceMs = deps.modelsWatchDebounceMs ?? 300;
  let watcher: FSWatcher | undefined;
  let pollingRegistry = false;
  let changeTimer: NodeJS.Timeout | undefined;
  let closed = false;
  const modelsChanged = () => {
    clearTimeout(changeTimer);
    changeTimer = setTimeout(() => emit({ type: 'modelsChanged' }), debounceMs);
  };
  const onRegistryStat = (cur: { mtimeMs: number }) => {
    if (cur.mtimeMs === 0) return;
    // The folder exists now: switch to a real watch.
    stopPolling();
    armWatch();
    modelsChanged();
  };
  const stopPolling = () => {
    if (pollingRegistry) unwatchFile(registryFile, onRegistryStat);
    pollingRegistry = false;
  };
  function armWatch(): void {
    if (closed || watcher) return;
    try {
      watcher = watch(customDir, { persistent: false }, () => modelsChanged());
      watcher.on('error', () => {
        // The folder was removed (or became unreadable): wait for it to come back.
        watcher?.close();
        watcher = undefined;
        modelsChanged();
        armPolling();
      });
    } catch {
      armPolling();
    }
  }
  function armPolling(): void {
    if (closed || pollingRegistry) return;
    // The folder does not exist yet; it is not created just to be watched. Polling one path is cheap.
    pollingRegistry = true;
    watchFile(registryFile, { persistent: false, interval: 1000 }, onRegistryStat);
  }
  armWatch();

  const downloads = new Map<string, Promise<ModelInfo>>();
  async function runDownload(entry: CatalogEntry): Promise<ModelInfo> {
    const name = entry.name;
    const target = deps.download?.target?.(entry) ?? entry;
    let last: { received: number; total: number | null } = { received: 0, total: target.download.size };
    let lastSent = 0;
    emit({ type: 'modelDownload', name, received: 0, total: last.total, state: 'downloading' });
    try {
      await fetchModel(target, {
        modelsDir,
        ...(deps.download?.dispatcher ? { dispatcher: deps.download.dispatcher } : {}),
        ...(deps.download?.connectTimeoutMs ? { connectTimeoutMs: deps.download.connectTimeoutMs } : {}),
        onProgress: (received, total) => {
          last = { received, total };
          const now = Date.now();
          if (now - lastSent < DOWNLOAD_EVENT_INTERVAL_MS && received !== total) return;
          lastSent = now;
          emit({ type: 'modelDownload', name, received, total, state: 'downloading' });
        },
      });
    } catch (e) {
      const error = `Could not install ${entry.title} (${name}): ${((e as Error).message ?? String(e)).split('\n')[0]}`;
      emit({ type: 'modelDownload', name, ...last, state: 'failed', error });
      throw new Error(error);
    }
    emit({ type: 'modelDownload', name, received: last.received, total: last.total ?? last.received, state: 'installed' });
    emit({ type: 'modelsChanged' });
    const info = (await localModels()).find((m) => m.name === name);
    if (!info) throw new Error(`${name} is missing from the catalog`);
    return info;
  }

  function itemOrThrow(id: string) {
    const item = queue.get(id);
    if (!item) throw new Error('That item is no longer in the queue.');
    return item;
  }

  return {
    getSettings: () => settings.get(),
    async updateSettings(patch) {
      const next = await settings.update(patch);
      emit({ type: 'settings', settings: next });
      return next;
    },
    async setApiKey(key) {
      await deps.secrets.set(API_KEY_SECRET, key === null ? null : key.trim());
    },
    hasApiKey: async () => Boolean(await deps.secrets.get(API_KEY_SECRET)),
    async listModels(): Promise<ModelInfo[]> {
      const s = await settings.get();
      if (s.mode === 'cloud') {
        const local = new Map(listCatalogModels(modelDirs).map((m) => [m.name, m]));
        return MODEL_NAMES.map((name) => {
          const m = local.get(name);
          return { name, title: m?.title ?? name, description: m?.description ?? '', kind: m?.kind ?? 'photo', scale: m?.scale ?? 4, installed: true, licence: m?.licence ?? '' };
        });
      }
      return localModels();
    },
    async downloadModel(name) {
      if ((await settings.get()).mode === 'cloud') throw new BadRequestError('Cloud mode needs no downloads: the service has every model.');
      if (!isModelName(name)) throw new BadRequestError(`${JSON.stringify(name)} is not a model Crisp can download.`);
      const entry = loadCatalog().find((e) => e.name === name);
      if (!entry) throw new BadRequestError(`${name} is missing from the model catalog.`);
      let running = downloads.get(name);
      if (!running) {
        running = runDownload(entry).finally(() => downloads.delete(name));
        downloads.set(name, running);
      }
      return running;
    },
    addPaths: (paths, options) => queue.addPaths(paths, options),
    addFile: (name, bytes) => queue.addFile(name, bytes),
    removeItem: (id) => queue.remove(id),
    clearFinished: () => queue.clearFinished(),
    start: () => queue.start(),
    cancel: (id) => queue.cancel(id),
    retry: (id) => queue.retry(id),
    getQueue: async () => queue.snapshot(),
    async estimate() {
      const s = await settings.get();
      return estimateCredits(s.mode, { scale: s.scale, enhanceFace: s.face }, queue.queuedItems().length);
    },
    getAccount,
    async readImage(id, which) {
      const item = itemOrThrow(id);
      const file = which === 'input' ? item.inputPath : item.outputPath;
      if (!file) throw new Error('This item has no output yet.');
      const bytes = new Uint8Array(await readFile(file));
      const mime = sniffImageType(bytes.subarray(0, 16)) ?? MIME_OF_EXT[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
      return { mime, bytes };
    },
    async revealOutput(id) {
      const item = itemOrThrow(id);
      if (!deps.revealOutput || !item.outputPath) return false;
      return deps.revealOutput(item.outputPath);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      watcher?.close();
      watcher = undefined;
      stopPolling();
      clearTimeout(changeTimer);
      await queue.close();
      await cached?.backend.close();
      cached = undefined;
      listeners.clear();
    },
  };
}
