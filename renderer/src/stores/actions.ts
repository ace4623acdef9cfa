/**
 * Everything the UI asks of the service, in one place: each action calls CrispService, puts the answer
 * in the right store, and turns a failure into a plain-words notice instead of an unhandled rejection.
 * Errors are scoped: a Cloud connection problem lives in the Cloud card (session.connection), not in the
 * global banner, and a notice caused in one mode disappears when the other mode is chosen.
 */
import type { CrispService, ServiceEvent, Settings } from '../../../app/service/crispService.js';
import type { DesktopHost } from '../../../electron/preload/desktopApi.js';
import type { BrowserHost } from '../service/httpService.js';
import { chime, soundEnabled } from '../service/chime.js';
import { copyImageToClipboard } from '../service/clipboard.js';
import type { QueueStore } from './queueStore.js';
import {
  selectBalance,
  selectEstimate,
  selectInsufficient,
  type ConnectionState,
  type Notice,
  type SessionStore,
} from './sessionStore.js';
import type { SettingsStore } from './settingsStore.js';
import { batchSummary } from './statusModel.js';
import { credits } from '../format.js';
import { resolveLocale, translator } from '../i18n/index.js';
import { codeOf, errorText, itemErrorText } from '../i18n/errorText.js';

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
  /**
   * A setting typed into a field: applied when the service accepts it, else answered with the refusal's sentence
   * for the field to show beside itself (no banner, no optimistic change to take back).
   */
  trySettings(patch: SettingsPatch): Promise<string | null>;
  addPaths(paths: string[]): Promise<void>;
  /** Browser files (or desktop files without a path); `rejected` are files refused before sending. */
  addFiles(files: readonly File[], rejected?: readonly string[]): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** After Stop: the stopped images run again. */
  resume(): Promise<void>;
  cancelItem(id: string): Promise<void>;
  /** One item, or every failed and stopped item ("Retry all"). */
  retry(id?: string): Promise<void>;
  removeItem(id: string): Promise<void>;
  /** Removes done and skipped rows; `discardUnsaved` also deletes results that were never downloaded. */
  clearFinished(options?: { discardUnsaved?: boolean }): Promise<void>;
  setApiKey(key: string | null): Promise<void>;
  /** Cloud card: saves the URL (and key when given), then asks the service for the account. */
  testConnection(baseUrl: string, key?: string): Promise<boolean>;
  reveal(id: string): Promise<void>;
  open(id: string): Promise<void>;
  /** Browser UI: downloads one result, or a zip of several, through a signed link. */
  download(ids: string[]): Promise<void>;
  copyImage(id: string): Promise<void>;
  /** Double upscale: queues a finished result as a new input, to run it through the model again. */
  upscaleAgain(id: string): Promise<void>;
  refreshAccount(): Promise<void>;
  /** Local mode: downloads and installs a catalog model; progress arrives as events. */
  downloadModel(name: string): Promise<void>;
  /** Stops a running download (a later Download resumes it). */
  cancelDownload(name: string): Promise<void>;
  /** Imports a model file as a custom model; true when it was imported. */
  importModel(file: File): Promise<boolean>;
  removeModel(name: string): Promise<void>;
  openModelsFolder(): Promise<void>;
  dismissNotice(): void;
}

const ESTIMATE_DELAY_MS = 150;

export function messageOf(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  // Electron prefixes errors that cross IPC; the preload strips it, this is a second guard.
  return raw.replace(/^Error invoking remote method '[^']+': (Error: )?/, '');
}

export interface ActionHosts {
  desktop?: DesktopHost | null;
  browser?: BrowserHost | null;
}

/** Cloud mode can only talk to a service once both are set; before that the Cloud card asks for them. */
export const isCloudConfigured = (settings: Settings | null, hasKey: boolean) => !!settings?.baseUrl && hasKey;

export function createActions(service: CrispService, stores: Stores, hosts: ActionHosts = {}): AppActions {
  const mode = () => stores.settings.getState().settings?.mode ?? 'local';
  // Notices are worded when they are raised, in the language chosen at that moment.
  const tr = () => translator(resolveLocale(stores.settings.getState().settings?.language));
  // A failure in the chosen language: known codes from the catalog, anything else as the app worded it.
  const sentence = (e: unknown) => errorText(codeOf(e), messageOf(e), tr());
  const failed = (e: unknown): ConnectionState => {
    const code = codeOf(e);
    return { state: 'failed', error: sentence(e), ...(code ? { code } : {}) };
  };
  const notify = (text: string, kind: Notice['kind'] = 'error', extra: Partial<Notice> = {}) =>
    stores.session.getState().showNotice({ kind, text, mode: mode(), ...extra });

  async function guarded<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (e) {
      notify(sentence(e));
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
    const { settings, hasApiKey } = stores.settings.getState();
    const session = stores.session.getState();
    if (settings?.mode !== 'cloud' || !isCloudConfigured(settings, hasApiKey)) {
      // Nothing to ask yet: the Cloud card says what is missing; this is not an error.
      session.setAccount(null);
      session.setConnection({ state: 'idle' });
      return;
    }
    try {
      session.setAccount(await service.getAccount());
      stores.session.getState().setConnection({ state: 'ok' });
    } catch (e) {
      session.setAccount(null);
      stores.session.getState().setConnection(failed(e));
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
        stores.session.getState().setConnection({ state: 'ok' });
        break;
      case 'settings':
        stores.settings.getState().setSettings(event.settings);
        scheduleEstimate();
        break;
      case 'batchFinished': {
        const { done, failed, total } = event;
        stores.session.getState().setLastBatch({ done, failed, total });
        const summary = batchSummary(event, tr());
        notify(summary.text, summary.kind);
        // The desktop app notifies from the main process (and denies page permissions).
        if (hosts.browser) systemNotification('Crisp', summary.text);
        if (soundEnabled()) chime();
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
      // A notice caused in the other mode no longer applies.
      const notice = stores.session.getState().notice;
      if (notice?.mode && notice.mode !== after.mode) stores.session.getState().showNotice(null);
      // "Installed" means different things locally and in the cloud, so the catalogue is re-read.
      stores.settings.getState().setModels(await service.listModels());
      await refreshAccount();
    }
    scheduleEstimate();
  };

  const updateSettings = async (patch: SettingsPatch) => {
    const before = stores.settings.getState().settings;
    // Optimistic: controlled inputs (radios, selects) must show the choice at once, not after IPC.
    if (before) stores.settings.getState().setSettings({ ...before, ...patch });
    const after = await guarded(() => service.updateSettings(patch));
    if (after) await afterSettings(before, after);
    else if (before) stores.settings.getState().setSettings(before);
  };

  const trySettings = async (patch: SettingsPatch): Promise<string | null> => {
    const before = stores.settings.getState().settings;
    try {
      await afterSettings(before, await service.updateSettings(patch));
      return null;
    } catch (e) {
      return sentence(e);
    }
  };

  const setApiKey = async (key: string | null) => {
    const ok = await guarded(async () => {
      await service.setApiKey(key);
      return true;
    });
    if (!ok) return;
    stores.settings.getState().setHasApiKey(await service.hasApiKey());
    await refreshAccount();
    await refreshModels();
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
    updateSettings,
    trySettings,
    async addPaths(paths) {
      if (paths.length === 0) return;
      const added = await guarded(() => service.addPaths(paths, { recursive: true }));
      if (!added) return;
      if (added.length === 0) notify(tr().t('notice.noImages'), 'info');
      const broken = added.filter((i) => i.status === 'failed');
      if (broken.length)
        notify(tr().t('notice.notAdded', { n: broken.length }), 'error', {
          lines: broken.map((i) => (i.error ? itemErrorText(i, tr()) : i.inputName)),
        });
    },
    async addFiles(files, rejected = []) {
      // One at a time: each file is read into memory only while it is being handed over. A refused
      // file does not stop the others, and each refusal gets its own line.
      const problems = [...rejected];
      for (const file of files) {
        try {
          const item = await service.addFile(file.name || 'pasted-image.png', new Uint8Array(await file.arrayBuffer()));
          if (item.status === 'failed')
            problems.push(
              item.error ? itemErrorText(item, tr()) : tr().t('notice.unreadable', { name: item.inputName }),
            );
        } catch (e) {
          problems.push(sentence(e));
        }
      }
      if (problems.length === 1) notify(problems[0] ?? '');
      else if (problems.length > 1)
        notify(tr().t('notice.filesNotAdded', { n: problems.length }), 'error', { lines: problems });
    },
    async start() {
      stores.session.getState().showNotice(null);
      const session = stores.session.getState();
      if (selectInsufficient(session)) {
        // Refused before anything is sent: no task starts, nothing is charged.
        notify(
          tr().t('notice.insufficient', {
            needed: credits(selectEstimate(session)?.credits ?? 0, tr()),
            balance: credits(selectBalance(session) ?? 0, tr()),
          }),
        );
        return;
      }
      if (hosts.browser) askNotificationPermission();
      await guarded(() => service.start());
    },
    stop: async () => void (await guarded(() => service.cancel())),
    async resume() {
      stores.session.getState().showNotice(null);
      await guarded(() => service.resume());
    },
    cancelItem: async (id) => void (await guarded(() => service.cancel(id))),
    retry: async (id) => void (await guarded(() => service.retry(id))),
    removeItem: async (id) => void (await guarded(() => service.removeItem(id))),
    async clearFinished(options) {
      // No options: no argument at all (an undefined would cross the wire as null).
      const result = await guarded(() => (options ? service.clearFinished(options) : service.clearFinished()));
      if (result?.keptUnsaved) notify(tr().t('clear.kept', { n: result.keptUnsaved }), 'info');
    },
    setApiKey,
    async testConnection(baseUrl, key) {
      const session = stores.session.getState();
      session.setConnection({ state: 'testing' });
      const url = baseUrl.trim();
      try {
        if (url !== stores.settings.getState().settings?.baseUrl)
          stores.settings.getState().setSettings(await service.updateSettings({ baseUrl: url }));
        if (key?.trim()) {
          await service.setApiKey(key.trim());
          stores.settings.getState().setHasApiKey(true);
        }
      } catch (e) {
        session.setConnection(failed(e));
        return false;
      }
      if (!url) {
        session.setConnection({ state: 'failed', error: tr().t('cloud.needUrl') });
        return false;
      }
      if (!stores.settings.getState().hasApiKey) {
        session.setConnection({ state: 'failed', error: tr().t('cloud.needKey') });
        return false;
      }
      try {
        stores.session.getState().setAccount(await service.getAccount());
        stores.session.getState().setConnection({ state: 'ok' });
        scheduleEstimate();
        // Connected: the picker can now offer exactly the service's models (get-capabilities).
        await refreshModels();
        return true;
      } catch (e) {
        stores.session.getState().setAccount(null);
        stores.session.getState().setConnection(failed(e));
        return false;
      }
    },
    async reveal(id) {
      const shown = await guarded(() => service.revealOutput(id));
      if (shown === false) notify(tr().t('notice.revealDesktopOnly'), 'info');
    },
    async open(id) {
      const opened = await guarded(() => service.openOutput(id));
      if (opened === false) notify(tr().t('notice.openFailed'), 'info');
    },
    async download(ids) {
      const browser = hosts.browser;
      if (!browser || ids.length === 0) return;
      const url = await guarded(() => browser.downloadLink(ids));
      if (!url) return;
      // A same-origin link with Content-Disposition: the browser saves it without leaving the page.
      const a = document.createElement('a');
      a.href = url;
      a.download = '';
      a.rel = 'noopener';
      document.body.append(a);
      a.click();
      a.remove();
    },
    async copyImage(id) {
      const copied = await guarded(async () => copyImageToClipboard(await service.readImage(id, 'output')));
      if (copied) notify(tr().t('notice.copied'), 'info');
    },
    async upscaleAgain(id) {
      const item = stores.queue.getState().queue.items.find((i) => i.id === id);
      if (!item?.outputPath) return;
      const added = await guarded(() => service.addPaths([item.outputPath!]));
      const again = added?.[0];
      if (!again || again.status !== 'queued') return;
      const scale = stores.settings.getState().settings?.scale ?? 1;
      const size = item.outputDimensions
        ? `${item.outputDimensions.width}×${item.outputDimensions.height}`
        : tr().t('notice.againSizeUnknown');
      notify(tr().t('notice.againQueued', { name: again.inputName, scale, size }), 'info');
    },
    refreshAccount,
    async downloadModel(name) {
      const settings = stores.settings.getState();
      // Shown at once, before the first progress event arrives.
      if (settings.downloads[name]?.state !== 'downloading')
        settings.setDownload({ type: 'modelDownload', name, received: 0, total: null, state: 'downloading' });
      let installed;
      try {
        installed = await service.downloadModel(name);
      } catch (e) {
        // A cancel is the person's own choice: the row says so, no error banner.
        if (stores.settings.getState().downloads[name]?.state !== 'cancelled') notify(messageOf(e));
      }
      if (installed) {
        notify(tr().t('notice.modelInstalled', { title: installed.title }), 'info');
      } else if (stores.settings.getState().downloads[name]?.state === 'downloading') {
        // The call failed before any event said so (e.g. refused): clear the bar.
        stores.settings
          .getState()
          .setDownload({ type: 'modelDownload', name, received: 0, total: null, state: 'failed' });
      }
      await refreshModels();
    },
    cancelDownload: async (name) => void (await guarded(() => service.cancelDownload(name))),
    async importModel(file) {
      const info = await guarded(async () => service.importModel(file.name, new Uint8Array(await file.arrayBuffer())));
      if (!info) return false;
      notify(tr().t('notice.modelImported', { title: info.title }), 'info');
      await refreshModels();
      return true;
    },
    async removeModel(name) {
      const ok = await guarded(async () => {
        await service.removeModel(name);
        return true;
      });
      if (ok) await refreshModels();
    },
    async openModelsFolder() {
      const opened = await guarded(() => service.openModelsFolder());
      if (opened === false) notify(tr().t('notice.folderDesktopOnly'), 'info');
    },
    dismissNotice: () => stores.session.getState().showNotice(null),
  };
}

/** Browser UI: a long batch ending in a background tab is announced (when the person allowed it). */
function systemNotification(title: string, body: string): void {
  if (typeof Notification === 'undefined' || typeof document === 'undefined' || !document.hidden) return;
  if (Notification.permission === 'granted') new Notification(title, { body });
}

/** Asked once, on the Upscale press (a user gesture, as browsers require); a refusal is respected. */
function askNotificationPermission(): void {
  if (typeof Notification === 'undefined' || Notification.permission !== 'default') return;
  void Notification.requestPermission().catch(() => undefined);
}
