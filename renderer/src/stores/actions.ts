/**
 * Everything the UI asks of the service, in one place: each action calls CrispService, puts the answer
 * in the right store, and turns a failure into a plain-words notice instead of an unhandled rejection.
 */
import type { CrispService, ServiceEvent, Settings } from '../../../app/service/crispService.js';
import type { QueueStore } from './queueStore.js';
import { selectBalance, selectEstimate, selectInsufficient, type SessionStore } from './sessionStore.js';
import type { SettingsStore } from './settingsStore.js';

export interface Stores {
  queue: QueueStore;
  settings: SettingsStore;
  session: SessionStore;
}

export type SettingsPatch = Partial<Omit<Settings, 'version'>>;

export interface AppActions {
  /** Subscribes, then loads everything; returns the unsubscribe. */
  connect(): () => void;
  updateSettings(patch: SettingsPatch): Promise<void>;
  addPaths(paths: string[]): Promise<void>;
  addFiles(files: readonly File[]): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  cancelItem(id: string): Promise<void>;
  retry(id?: string): Promise<void>;
  removeItem(id: string): Promise<void>;
  clearFinished(): Promise<void>;
  setApiKey(key: string | null): Promise<void>;
  reveal(id: string): Promise<void>;
  refreshAccount(): Promise<void>;
  /** Local mode: downloads and installs a catalog model; progress arrives as events. */
  downloadModel(name: string): Promise<void>;
  dismissNotice(): void;
}

const ESTIMATE_DELAY_MS = 150;

export function messageOf(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  // Electron prefixes errors that cross IPC; the preload strips it, this is a second guard.
  return raw.replace(/^Error invoking remote method '[^']+': (Error: )?/, '');
}

export function createActions(service: CrispService, stores: Stores): AppActions {
  const notify = (text: string, kind: 'error' | 'info' = 'error') => stores.session.getState().showNotice({ kind, text });

  async function guarded<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (e) {
      notify(messageOf(e));
      return undefined;
    }
  }

  let estimateTimer: ReturnType<typeof setTimeout> | undefined;
  const scheduleEstimate = () => {
    clearTimeout(estimateTimer);
    estimateTimer = setTimeout(() => {
      void service.estimate().then(
        (estimate) => stores.session.getState().setEstimate(estimate),
        () => stores.session.getState().setEstimate(null),
      );
    }, ESTIMATE_DELAY_MS);
  };

  const refreshAccount = async () => {
    if (stores.settings.getState().settings?.mode !== 'cloud') {
      stores.session.getState().setAccount(null);
      return;
    }
    try {
      stores.session.getState().setAccount(await service.getAccount());
    } catch (e) {
      stores.session.getState().setAccount({ available: false });
      notify(messageOf(e));
    }
  };

  const refreshModels = async () => {
    try {
      stores.settings.getState().setModels(await service.listModels());
    } catch {
      // The next change (or a mode switch) reads them again.
    }
  };

  const onEvent = (event: ServiceEvent) => {
    switch (event.type) {
      case 'queue':
        stores.queue.getState().applySnapshot(event.queue);
        scheduleEstimate();
        break;
      case 'item':
        stores.queue.getState().applyItem(event.item);
        break;
      case 'account':
        stores.session.getState().setAccount(event.account);
        break;
      case 'settings':
        stores.settings.getState().setSettings(event.settings);
        scheduleEstimate();
        break;
      case 'batchFinished': {
        const { done, failed, total } = event;
        stores.session.getState().setLastBatch({ done, failed, total });
        const text = failed ? `Finished: ${done} of ${total} upscaled, ${failed} failed.` : `Finished: ${done} of ${total} upscaled.`;
        notify(text, failed ? 'error' : 'info');
        scheduleEstimate();
        break;
      }
      case 'modelDownload':
        stores.settings.getState().setDownload(event);
        break;
      case 'modelsChanged':
        void refreshModels();
        break;
    }
  };

  const afterSettings = async (before: Settings | null, after: Settings) => {
    stores.settings.getState().setSettings(after);
    if (!before || before.mode !== after.mode) {
      // "Installed" means different things locally and in the cloud, so the catalogue is re-read.
      stores.settings.getState().setModels(await service.listModels());
      await refreshAccount();
    }
    scheduleEstimate();
  };

  return {
    connect() {
      const unsubscribe = service.subscribe(onEvent);
      void guarded(async () => {
        const [settings, models, queue, hasKey] = await Promise.all([
          service.getSettings(),
          service.listModels(),
          service.getQueue(),
          service.hasApiKey(),
        ]);
        stores.settings.getState().setModels(models);
        stores.settings.getState().setSettings(settings);
        stores.settings.getState().setHasApiKey(hasKey);
        stores.queue.getState().applySnapshot(queue);
        await refreshAccount();
        scheduleEstimate();
      });
      return () => {
        clearTimeout(estimateTimer);
        unsubscribe();
      };
    },
    async updateSettings(patch) {
      const before = stores.settings.getState().settings;
      // Optimistic: controlled inputs (radios, selects) must show the choice at once, not after IPC.
      if (before) stores.settings.getState().setSettings({ ...before, ...patch });
      const after = await guarded(() => service.updateSettings(patch));
      if (after) await afterSettings(before, after);
      else if (before) stores.settings.getState().setSettings(before);
    },
    async addPaths(paths) {
      if (paths.length === 0) return;
      const added = await guarded(() => service.addPaths(paths, { recursive: true }));
      if (added && added.length === 0) notify('No supported images found (Crisp reads JPG, PNG and WebP).', 'info');
    },
    async addFiles(files) {
      // One at a time: each file is read into memory only while it is being handed over.
      for (const file of files) {
        const ok = await guarded(async () => service.addFile(file.name || 'pasted-image.png', new Uint8Array(await file.arrayBuffer())));
        if (ok === undefined) break;
      }
    },
    async start() {
      stores.session.getState().showNotice(null);
      const session = stores.session.getState();
      if (selectInsufficient(session)) {
        // Refused before anything is sent: no task starts, nothing is charged.
        notify(`Insufficient credits: these images need ${selectEstimate(session)?.credits} credits and the account has ${selectBalance(session)}.`);
        return;
      }
      await guarded(() => service.start());
    },
    stop: async () => void (await guarded(() => service.cancel())),
    cancelItem: async (id) => void (await guarded(() => service.cancel(id))),
    retry: async (id) => void (await guarded(() => service.retry(id))),
    removeItem: async (id) => void (await guarded(() => service.removeItem(id))),
    clearFinished: async () => void (await guarded(() => service.clearFinished())),
    async setApiKey(key) {
      const ok = await guarded(async () => {
        await service.setApiKey(key);
        return true;
      });
      if (!ok) return;
      stores.settings.getState().setHasApiKey(await service.hasApiKey());
      await refreshAccount();
      scheduleEstimate();
    },
    async reveal(id) {
      const shown = await guarded(() => service.revealOutput(id));
      if (shown === false) notify('Showing files in the file manager only works in the desktop app.', 'info');
    },
    refreshAccount,
    async downloadModel(name) {
      const settings = stores.settings.getState();
      // Shown at once, before the first progress event arrives.
      if (settings.downloads[name]?.state !== 'downloading') settings.setDownload({ type: 'modelDownload', name, received: 0, total: null, state: 'downloading' });
      const installed = await guarded(() => service.downloadModel(name));
      if (installed) {
        notify(`${installed.title} is installed.`, 'info');
      } else if (stores.settings.getState().downloads[name]?.state === 'downloading') {
        // The call failed before any event said so (e.g. refused): clear the bar.
        stores.settings.getState().setDownload({ type: 'modelDownload', name, received: 0, total: null, state: 'failed' });
      }
      await refreshModels();
    },
    dismissNotice: () => stores.session.getState().showNotice(null),
  };
}
