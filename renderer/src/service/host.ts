/**
 * Where the renderer runs: inside the Electron window (`window.crisp` from the preload, with native
 * dialogs and real file paths) or in a browser opened by `crisp ui` (HTTP bridge; files go as bytes).
 */
import type { CrispService } from '../../../app/service/crispService.js';
import type { CrispDesktopApi, DesktopHost } from '../../../electron/preload/desktopApi.js';
import { createHttpService, type BrowserHost } from './httpService.js';

declare global {
  interface Window {
    crisp?: CrispDesktopApi;
  }
}

export interface Host {
  service: CrispService;
  /** null in the browser: no native dialogs, no file paths. */
  desktop: DesktopHost | null;
  /** null in the desktop app: results are already files there. */
  browser: BrowserHost | null;
}

/** The token `crisp ui` put in the URL it printed; kept for reloads of this tab only. */
function bridgeToken(): string {
  const fromUrl = new URLSearchParams(window.location.search).get('token');
  if (fromUrl) {
    sessionStorage.setItem('crisp-token', fromUrl);
    return fromUrl;
  }
  return sessionStorage.getItem('crisp-token') ?? '';
}

export function resolveHost(): Host {
  const api = window.crisp;
  if (api) return { service: api, desktop: api.desktop, browser: null };
  const http = createHttpService({ token: bridgeToken() });
  return { service: http, desktop: null, browser: http };
}
