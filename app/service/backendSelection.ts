/**
 * The backend the settings choose: the local worker process or a remote service. One instance is kept
 * while the settings that shape it stay the same, so a settings change (mode, URL, key, threads) applies
 * to the next item without restarting anything else. What travels with each job (model, scale, face model
 * and strength, denoise…) is not part of that identity: changing it never restarts the local engine.
 */
import path from 'node:path';
import type { UpscaleBackend } from '../backends/backend.js';
import type { WorkerSpawner } from '../backends/local/workerSpawner.js';
import { createRemoteBackend, type RemoteBackendOptions } from '../remote/remoteBackend.js';
import { API_KEY_SECRET, type SecretStore } from '../secrets/secretStore.js';
import type { Settings } from './crispService.js';
import { CrispError } from '../../engine/contract/index.js';

/** How a backend is made once the settings are known (tests inject a scripted one). */
export type BackendFactory = (
  settings: Settings,
  apiKey: string | undefined,
) => UpscaleBackend | Promise<UpscaleBackend>;

export interface BackendSelectionDeps {
  dataDir: string;
  secrets: SecretStore;
  modelDirs: string[];
  modelsDir: string;
  spawner?: WorkerSpawner;
  remote?: Partial<Omit<RemoteBackendOptions, 'baseUrl' | 'apiKey'>>;
  factory?: BackendFactory;
}

export interface BackendSelection {
  backendFor(settings: Settings): Promise<UpscaleBackend>;
  close(): Promise<void>;
}

/** Cloud mode needs a URL and a key; these are the words shown when either is missing. */
export const NO_SERVICE_URL = 'No service URL is set: enter one in the Cloud card.';
export const NO_API_KEY = 'No API key is set: enter your key in the Cloud card.';

export function createBackendSelection(deps: BackendSelectionDeps): BackendSelection {
  let cached: { key: string; backend: Promise<UpscaleBackend> } | undefined;

  // The local backend is loaded on first use: it locates the worker entry at import time, which a
  // cloud-only session or a test double has no use for.
  const defaultFactory: BackendFactory = async (s, apiKey) =>
    s.mode === 'local'
      ? (await import('../backends/local/localBackend.js')).createLocalBackend({
          dataDir: path.join(deps.dataDir, 'engine'),
          modelDirs: deps.modelDirs,
          customModelsDir: deps.modelsDir,
          executionProvider: s.executionProvider,
          ...(s.threads ? { threads: s.threads } : {}),
          ...(s.tileSize ? { tileSize: s.tileSize } : {}),
          ...(s.precision ? { precision: s.precision } : {}),
          ...(deps.spawner ? { spawner: deps.spawner } : {}),
        })
      : createRemoteBackend({ ...deps.remote, baseUrl: s.baseUrl, apiKey: apiKey ?? '' });
  const factory = deps.factory ?? defaultFactory;

  return {
    async backendFor(s) {
      let key: string;
      let apiKey: string | undefined;
      if (s.mode === 'local') {
        // Exactly what createLocalBackend is given above: the worker process's own settings.
        key = JSON.stringify(['local', s.executionProvider, s.threads, s.tileSize, s.precision]);
      } else {
        apiKey = await deps.secrets.get(API_KEY_SECRET);
        if (!s.baseUrl) throw new CrispError('bad-request', NO_SERVICE_URL);
        if (!apiKey) throw new CrispError('unauthorized', NO_API_KEY);
        // The key is part of the cache identity but never stored in a readable form elsewhere.
        key = JSON.stringify(['cloud', s.baseUrl, apiKey]);
      }
      if (cached?.key !== key) {
        const old = cached?.backend;
        cached = { key, backend: Promise.resolve(factory(s, apiKey)) };
        void old?.then(
          (b) => b.close(),
          () => undefined,
        );
      }
      return cached.backend;
    },
    async close() {
      const last = cached?.backend;
      cached = undefined;
      await last?.then(
        (b) => b.close(),
        () => undefined,
      );
    },
  };
}
