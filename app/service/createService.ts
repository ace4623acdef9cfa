/**
 * createService: the CrispService implementation used by Electron's main process and by `crisp ui`'s
 * bridge. It composes settings (settingsStore), the API key (SecretStore), the job queue (jobs/) and the
 * backend the settings choose (local worker process or remote service), and fans events out to
 * subscribers.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { MODEL_NAMES } from '../../engine/contract/index.js';
import { listModels as listCatalogModels, modelSearchDirs } from '../../engine/models/catalog.js';
import { sniffImageType } from '../../engine/storage/imageSniff.js';
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
}

export interface ServiceHandle extends CrispService {
  /** Stops the running item (it resumes on the next start), the worker, and flushes state. */
  close(): Promise<void>;
}

const MIME_OF_EXT: Record<string, string> = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp' };

export async function createService(deps: ServiceDeps): Promise<ServiceHandle> {
  const settings = await openSettingsStore(path.join(deps.dataDir, 'settings.json'), deps.settingsDefaults);
  const modelDirs = deps.modelDirs ?? modelSearchDirs();
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
      key = JSON.stringify(['local', s.executionProvider, s.threads, s.tileSize]);
      make = () =>
        createLocalBackend({
          dataDir: path.join(deps.dataDir, 'engine'),
          modelDirs,
          executionProvider: s.executionProvider,
          ...(s.threads ? { threads: s.threads } : {}),
          ...(s.tileSize ? { tileSize: s.tileSize } : {}),
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
      return listCatalogModels(modelDirs).map((m) => ({
        name: m.name,
        title: m.title,
        description: m.description,
        kind: m.kind,
        scale: m.scale,
        installed: m.installed,
        licence: m.licence,
      }));
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
      await queue.close();
      await cached?.backend.close();
      cached = undefined;
      listeners.clear();
    },
  };
}
