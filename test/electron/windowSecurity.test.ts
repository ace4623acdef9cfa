/** The window's security settings and the session/webContents hardening, with fakes for Electron. */
import { describe, expect, it, vi } from 'vitest';
import {
  hardenContents,
  hardenSession,
  isAppUrl,
  mainWindowOptions,
  RENDERER_CSP,
  type HardenableSession,
} from '../../electron/main/windowSecurity.js';

function fakeSession() {
  const s: HardenableSession & {
    requestHandler?: (wc: unknown, permission: string, cb: (granted: boolean) => void) => void;
    checkHandler?: (wc: unknown, permission: string) => boolean;
    headersListener?: Parameters<HardenableSession['webRequest']['onHeadersReceived']>[0];
  } = {
    setPermissionRequestHandler(h) {
      s.requestHandler = h;
    },
    setPermissionCheckHandler(h) {
      s.checkHandler = h;
    },
    webRequest: {
      onHeadersReceived(l) {
        s.headersListener = l;
      },
    },
  };
  return s;
}

describe('window security', () => {
  it('creates a sandboxed, context-isolated window without Node', () => {
    const o = mainWindowOptions('/app/out/electron/preload.cjs');
    expect(o.webPreferences).toMatchObject({
      preload: '/app/out/electron/preload.cjs',
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
    });
  });

  it('the CSP allows only our own scripts and styles', () => {
    expect(RENDERER_CSP).toContain("default-src 'none'");
    expect(RENDERER_CSP).toContain("script-src 'self'");
    expect(RENDERER_CSP).toContain("style-src 'self'");
    expect(RENDERER_CSP).not.toMatch(/unsafe-|\*/);
  });

  it('denies every permission request and sets the CSP on every response', () => {
    const s = fakeSession();
    hardenSession(s);
    for (const p of ['media', 'geolocation', 'notifications', 'clipboard-read', 'openExternal']) {
      const cb = vi.fn();
      s.requestHandler!(null, p, cb);
      expect(cb).toHaveBeenCalledWith(false);
      expect(s.checkHandler!(null, p)).toBe(false);
    }
    const cb = vi.fn();
    s.headersListener!(
      {
        url: 'app://crisp/index.html',
        responseHeaders: { 'content-security-policy': ['default-src *'], 'X-Other': ['1'] },
      },
      cb,
    );
    const headers = cb.mock.calls[0]![0].responseHeaders as Record<string, string[]>;
    expect(headers['Content-Security-Policy']).toEqual([RENDERER_CSP]);
    expect(headers['content-security-policy']).toBeUndefined();
    expect(headers['X-Other']).toEqual(['1']);
  });

  it('blocks navigation away from the app and every new window', () => {
    const handlers: Record<string, (...a: unknown[]) => void> = {};
    let openHandler: ((d: { url: string }) => { action: 'deny' }) | undefined;
    const openExternal = vi.fn();
    hardenContents(
      {
        setWindowOpenHandler: (h) => (openHandler = h),
        on: (event: string, l: (...a: never[]) => void) => (handlers[event] = l as (...a: unknown[]) => void),
      },
      openExternal,
    );
    expect(openHandler!({ url: 'https://example.com/docs' })).toEqual({ action: 'deny' });
    expect(openHandler!({ url: 'file:///etc/passwd' })).toEqual({ action: 'deny' });
    expect(openExternal).toHaveBeenCalledTimes(1);
    for (const [url, blocked] of [
      ['https://evil.example/', true],
      ['file:///home/me/x.html', true],
      ['app://other/index.html', true],
      ['app://crisp/index.html', false],
    ] as const) {
      const event = { preventDefault: vi.fn() };
      handlers['will-navigate']!(event, url);
      expect(event.preventDefault).toHaveBeenCalledTimes(blocked ? 1 : 0);
    }
    const redirect = { preventDefault: vi.fn() };
    handlers['will-redirect']!(redirect, 'http://127.0.0.1:1/');
    expect(redirect.preventDefault).toHaveBeenCalled();
    const webview = { preventDefault: vi.fn() };
    handlers['will-attach-webview']!(webview);
    expect(webview.preventDefault).toHaveBeenCalled();
    expect(isAppUrl('not a url')).toBe(false);
  });
});
