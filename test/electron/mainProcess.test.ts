/**
 * Loads the real electron/main/main.ts against a recording fake of Electron and the real app layer,
 * then checks the wiring: single instance, a sandboxed/isolated window on app://, the CSP on the
 * protocol and the session, permissions denied, validated IPC, the menu, and batch notifications.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { IPC, type CallResult } from '../../electron/shared/ipcChannels.js';
import { RENDERER_CSP } from '../../electron/main/windowSecurity.js';
import { FakeBrowserWindow, electronState } from './fakeElectron.js';

vi.mock('electron', async () => (await import('./fakeElectron.js')).electronModule);

const fromApp = {
  sender: { id: 1, send() {}, isDestroyed: () => false, once() {} },
  senderFrame: { url: 'app://crisp/index.html' },
};
let window: FakeBrowserWindow;

beforeAll(async () => {
  // The protocol serves the renderer from out/renderer beside the bundle; point it at a fixture instead.
  const fixture = await mkdtemp(path.join(os.tmpdir(), 'crisp-renderer-fixture-'));
  await writeFile(path.join(fixture, 'index.html'), '<!doctype html><title>Crisp</title>');
  process.env.CRISP_RESOURCES_DIR = path.resolve('resources');
  await import('../../electron/main/main.js');
  electronState.app.readyResolve();
  await vi.waitFor(() => expect(FakeBrowserWindow.instances).toHaveLength(1), { timeout: 20_000 });
  window = FakeBrowserWindow.instances[0]!;
  // Swap the handler's root by re-registering with the fixture (the path logic itself is tested separately).
  const { createAppProtocolHandler } = await import('../../electron/main/appProtocol.js');
  electronState.protocolHandlers.set('app-fixture', createAppProtocolHandler(fixture));
});

afterAll(() => {
  electronState.app.emit('before-quit', { preventDefault() {} });
});

describe('electron main process', () => {
  it('asks for the single-instance lock and focuses the window on a second launch', () => {
    expect(electronState.app.singleInstanceRequested).toBe(true);
    electronState.app.emit('second-instance', {}, ['crisp-desktop'], process.cwd());
    expect(window.focused).toBe(1);
  });

  it('creates the window sandboxed, context-isolated, without Node, with the preload, on app://', () => {
    const prefs = window.options.webPreferences as Record<string, unknown>;
    expect(prefs).toMatchObject({ sandbox: true, contextIsolation: true, nodeIntegration: false, webviewTag: false });
    expect(String(prefs.preload)).toMatch(/preload\.cjs$/);
    expect(window.loadedUrl).toBe('app://crisp/index.html');
    expect(electronState.schemes).toEqual([
      { scheme: 'app', privileges: { standard: true, secure: true, supportFetchAPI: true } },
    ]);
  });

  it('serves pages with the CSP and hardens the session and the page', async () => {
    const res = await electronState.protocolHandlers.get('app-fixture')!(new Request('app://crisp/index.html'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(RENDERER_CSP);
    expect(
      (await electronState.protocolHandlers.get('app-fixture')!(new Request('app://crisp/../../etc/passwd'))).status,
    ).toBe(404);
    expect(electronState.protocolHandlers.has('app')).toBe(true);
    const cb = vi.fn();
    electronState.session.permissionRequest!(null, 'media', cb);
    expect(cb).toHaveBeenCalledWith(false);
    const headers = vi.fn();
    electronState.session.headers!({ url: 'app://crisp/', responseHeaders: {} }, headers);
    expect(headers.mock.calls[0]![0].responseHeaders['Content-Security-Policy']).toEqual([RENDERER_CSP]);
    expect(window.webContents.windowOpenHandler!({ url: 'https://x.example' })).toEqual({ action: 'deny' });
    const nav = { preventDefault: vi.fn() };
    window.webContents.emit('will-navigate', nav, 'https://evil.example');
    expect(nav.preventDefault).toHaveBeenCalled();
  });

  it('routes validated IPC calls to the real app layer', async () => {
    const call = electronState.ipcHandlers.get(IPC.call)!;
    const settings = (await call(fromApp, 'getSettings', [])) as CallResult;
    expect(settings).toMatchObject({ ok: true, value: { version: 1 } });
    const updated = (await call(fromApp, 'updateSettings', [{ scale: 3, format: 'webp' }])) as CallResult;
    expect(updated).toMatchObject({ ok: true, value: { scale: 3, format: 'webp' } });
    expect(await call(fromApp, 'updateSettings', [{ scale: 12 }])).toMatchObject({ ok: false });
    expect(await call({ ...fromApp, senderFrame: { url: 'https://evil.example/' } }, 'getSettings', [])).toMatchObject({
      ok: false,
    });
    expect(electronState.ipcHandlers.has(IPC.desktop)).toBe(true);
    expect(electronState.ipcListeners.has(IPC.subscribe)).toBe(true);
  });

  it('installs the app menu with Upscale and Stop', () => {
    const labels = JSON.stringify(electronState.menuTemplate);
    for (const l of ['Add Images…', 'Add Folder…', 'Choose Output Folder…', 'Upscale', 'Stop'])
      expect(labels).toContain(l);
  });

  it('keeps the secret out of the settings file (safeStorage)', async () => {
    const call = electronState.ipcHandlers.get(IPC.call)!;
    expect(await call(fromApp, 'setApiKey', ['secret-key-123'])).toEqual({ ok: true, value: undefined });
    expect(await call(fromApp, 'hasApiKey', [])).toEqual({ ok: true, value: true });
    const { readFile } = await import('node:fs/promises');
    const sealed = await readFile(path.join(electronState.app.userData, 'secrets.json'), 'utf8');
    expect(sealed).not.toContain('secret-key-123');
    expect(electronState.errors).toEqual([]);
  });
});
