/**
 * The window's security settings in one place, behind small structural interfaces so a Node test can
 * check them without Electron: sandboxed renderer, context isolation, no Node, a strict CSP on every
 * response, no navigation away from the app, no new windows, every permission request denied.
 */
import type { BrowserWindowConstructorOptions } from 'electron';
import { RENDERER_CSP } from '../../app/ui/securityHeaders.js';

export const APP_SCHEME = 'app';
export const APP_HOST = 'crisp';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const APP_URL = `${APP_ORIGIN}/index.html`;
export { RENDERER_CSP };

export function mainWindowOptions(preloadPath: string, icon?: string): BrowserWindowConstructorOptions {
  return {
    width: 1280,
    height: 840,
    // The layout stacks below 720 px (sidebar above the queue), so a narrow window stays usable.
    minWidth: 400,
    minHeight: 480,
    show: false,
    title: 'Crisp',
    ...(icon ? { icon } : {}),
    backgroundColor: '#14171c',
    webPreferences: {
      preload: preloadPath,
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
      navigateOnDragDrop: false,
    },
  };
}

export function isAppUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === `${APP_SCHEME}:` && u.host === APP_HOST;
  } catch {
    return false;
  }
}

/** The parts of webContents/session the hardening touches. */
export interface HardenableContents {
  setWindowOpenHandler(handler: (details: { url: string }) => { action: 'deny' }): void;
  on(
    event: 'will-navigate' | 'will-redirect',
    listener: (event: { preventDefault(): void }, url: string) => void,
  ): void;
  on(event: 'will-attach-webview', listener: (event: { preventDefault(): void }) => void): void;
}

export interface HardenableSession {
  setPermissionRequestHandler(
    handler: (webContents: unknown, permission: string, callback: (granted: boolean) => void) => void,
  ): void;
  setPermissionCheckHandler(handler: (webContents: unknown, permission: string) => boolean): void;
  webRequest: {
    onHeadersReceived(
      listener: (
        details: { url: string; responseHeaders?: Record<string, string[] | string> },
        callback: (response: { responseHeaders: Record<string, string[] | string> }) => void,
      ) => void,
    ): void;
  };
}

export function hardenContents(contents: HardenableContents, openExternal?: (url: string) => void): void {
  contents.setWindowOpenHandler(({ url }) => {
    // Links to the web (documentation, the account page) open in the browser, never in the app.
    if (openExternal && /^https:\/\//.test(url)) openExternal(url);
    return { action: 'deny' };
  });
  const stayInApp = (event: { preventDefault(): void }, url: string) => {
    if (!isAppUrl(url)) event.preventDefault();
  };
  contents.on('will-navigate', stayInApp);
  contents.on('will-redirect', stayInApp);
  contents.on('will-attach-webview', (event) => event.preventDefault());
}

export function hardenSession(session: HardenableSession): void {
  // The app needs no camera, notifications-from-page, geolocation, clipboard-read…: deny all of them.
  session.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  session.setPermissionCheckHandler(() => false);
  session.webRequest.onHeadersReceived((details, callback) => {
    const headers = { ...(details.responseHeaders ?? {}) };
    for (const key of Object.keys(headers)) if (key.toLowerCase() === 'content-security-policy') delete headers[key];
    headers['Content-Security-Policy'] = [RENDERER_CSP];
    callback({ responseHeaders: headers });
  });
}
