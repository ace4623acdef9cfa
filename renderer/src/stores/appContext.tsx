/**
 * Creates the three stores and the actions for one CrispService and hands them to the component tree.
 * Stores are per provider (not module singletons) so every test gets fresh ones.
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { useStore } from 'zustand';
import type { CrispService } from '../../../app/service/crispService.js';
import type { DesktopHost } from '../../../electron/preload/desktopApi.js';
import type { BrowserHost } from '../service/httpService.js';
import { createImageCache, type ImageCache } from '../service/imageCache.js';
import { createActions, type AppActions, type Stores } from './actions.js';
import { createQueueStore, type QueueState } from './queueStore.js';
import { createSessionStore, type SessionState } from './sessionStore.js';
import { createSettingsStore, type SettingsState } from './settingsStore.js';

export interface AppContextValue extends Stores {
  service: CrispService;
  desktop: DesktopHost | null;
  browser: BrowserHost | null;
  actions: AppActions;
  images: ImageCache;
}

const AppContext = createContext<AppContextValue | null>(null);

export function createAppContext(
  service: CrispService,
  desktop: DesktopHost | null,
  browser: BrowserHost | null = null,
): AppContextValue {
  const stores: Stores = { queue: createQueueStore(), settings: createSettingsStore(), session: createSessionStore() };
  return {
    ...stores,
    service,
    desktop,
    browser,
    actions: createActions(service, stores, { desktop, browser }),
    images: createImageCache(service),
  };
}

export function AppProvider(props: {
  service: CrispService;
  desktop?: DesktopHost | null;
  browser?: BrowserHost | null;
  children: ReactNode;
}) {
  const [value] = useState(() => createAppContext(props.service, props.desktop ?? null, props.browser ?? null));
  useEffect(() => {
    const disconnect = value.actions.connect();
    return () => {
      disconnect();
      value.images.dispose();
    };
  }, [value]);
  return <AppContext.Provider value={value}>{props.children}</AppContext.Provider>;
}

export function useApp(): AppContextValue {
  const value = useContext(AppContext);
  if (!value) throw new Error('useApp outside <AppProvider>');
  return value;
}

export const useQueue = <T,>(selector: (s: QueueState) => T): T => useStore(useApp().queue, selector);
export const useSettings = <T,>(selector: (s: SettingsState) => T): T => useStore(useApp().settings, selector);
export const useSession = <T,>(selector: (s: SessionState) => T): T => useStore(useApp().session, selector);
export const useActions = (): AppActions => useApp().actions;
