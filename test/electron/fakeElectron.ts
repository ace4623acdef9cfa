/**
 * A recording stand-in for the parts of Electron that electron/main/main.ts touches, so the real main
 * module can be loaded in Node (the Electron binary cannot run here) and its wiring inspected.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Listener = (...args: unknown[]) => unknown;

export class FakeWebContents extends EventEmitter {
  id = 1;
  windowOpenHandler: ((d: { url: string }) => { action: string }) | undefined;
  setWindowOpenHandler(h: (d: { url: string }) => { action: string }) {
    this.windowOpenHandler = h;
  }
  send() {}
  isDestroyed() {
    return false;
  }
}

export class FakeBrowserWindow extends EventEmitter {
  static instances: FakeBrowserWindow[] = [];
  loadedUrl: string | undefined;
  progress: number[] = [];
  focused = 0;
  webContents = new FakeWebContents();
  constructor(readonly options: Record<string, unknown>) {
    super();
    FakeBrowserWindow.instances.push(this);
    electronState.app.emit('web-contents-created', {}, this.webContents);
  }
  loadURL(url: string) {
    this.loadedUrl = url;
    return Promise.resolve();
  }
  show() {}
  isMinimized() {
    return true;
  }
  restore() {}
  focus() {
    this.focused++;
  }
  setProgressBar(p: number) {
    this.progress.push(p);
  }
  isFocused() {
    return false;
  }
  isDestroyed() {
    return false;
  }
}

class FakeApp extends EventEmitter {
  isPackaged = false;
  readyResolve!: () => void;
  ready = new Promise<void>((r) => (this.readyResolve = r));
  userData = mkdtempSync(path.join(os.tmpdir(), 'crisp-electron-userdata-'));
  singleInstanceRequested = false;
  requestSingleInstanceLock() {
    this.singleInstanceRequested = true;
    return true;
  }
  whenReady() {
    return this.ready;
  }
  getPath(name: string) {
    if (name !== 'userData') throw new Error(`unexpected getPath(${name})`);
    return this.userData;
  }
  quit() {}
  exit() {}
}

export const electronState = {
  app: new FakeApp(),
  schemes: [] as unknown[],
  protocolHandlers: new Map<string, (req: Request) => Promise<Response>>(),
  ipcHandlers: new Map<string, Listener>(),
  ipcListeners: new Map<string, Listener>(),
  menuTemplate: undefined as unknown,
  notifications: [] as { title: string; body: string }[],
  errors: [] as string[],
  forks: [] as string[],
  session: {
    permissionRequest: undefined as undefined | ((wc: unknown, p: string, cb: (g: boolean) => void) => void),
    permissionCheck: undefined as undefined | ((wc: unknown, p: string) => boolean),
    headers: undefined as undefined | Listener,
  },
};

export const electronModule = {
  app: electronState.app,
  BrowserWindow: FakeBrowserWindow,
  protocol: {
    registerSchemesAsPrivileged: (s: unknown[]) => electronState.schemes.push(...s),
    handle: (scheme: string, h: (req: Request) => Promise<Response>) => electronState.protocolHandlers.set(scheme, h),
  },
  session: {
    defaultSession: {
      setPermissionRequestHandler: (h: typeof electronState.session.permissionRequest) =>
        (electronState.session.permissionRequest = h),
      setPermissionCheckHandler: (h: typeof electronState.session.permissionCheck) =>
        (electronState.session.permissionCheck = h),
      webRequest: { onHeadersReceived: (l: Listener) => (electronState.session.headers = l) },
    },
  },
  ipcMain: {
    handle: (c: string, h: Listener) => electronState.ipcHandlers.set(c, h),
    on: (c: string, l: Listener) => electronState.ipcListeners.set(c, l),
  },
  Menu: {
    buildFromTemplate: (t: unknown) => t,
    setApplicationMenu: (m: unknown) => (electronState.menuTemplate = m),
  },
  Notification: class {
    static isSupported() {
      return true;
    }
    constructor(private readonly o: { title: string; body: string }) {}
    show() {
      electronState.notifications.push(this.o);
    }
  },
  dialog: {
    showOpenDialog: async () => ({ canceled: true, filePaths: [] }),
    showErrorBox: (_t: string, m: string) => electronState.errors.push(m),
  },
  shell: { showItemInFolder: () => undefined, openPath: async () => '', openExternal: async () => undefined },
  nativeImage: { createFromPath: () => ({ resize: () => ({}) }) },
  utilityProcess: {
    fork: (p: string) => {
      electronState.forks.push(p);
      throw new Error('no utility processes in this test');
    },
  },
  safeStorage: {
    isEncryptionAvailable: () => true,
    encryptString: (s: string) => Buffer.from(`enc:${s}`),
    decryptString: (b: Buffer) => b.toString().slice(4),
  },
};
