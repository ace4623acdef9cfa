/**
 * Electron main process: a thin adapter. It wires Electron's APIs (windows, dialogs, IPC, menu,
 * notifications, utilityProcess, safeStorage) into the app layer's createService and the small,
 * Node-tested modules beside this file. No application logic lives here.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BrowserWindow,
  Menu,
  Notification,
  app,
  dialog,
  ipcMain,
  nativeImage,
  protocol,
  safeStorage,
  session,
  shell,
  utilityProcess,
} from 'electron';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import { appMenuTemplate } from './appMenu.js';
import { appPaths } from './appPaths.js';
import { createAppProtocolHandler } from './appProtocol.js';
import { createDragOut } from './dragOut.js';
import { followBatch } from './batchFeedback.js';
import { createLaunchHandler, parseLaunchArgs } from './launchArgs.js';
import { createNativeDialogs } from './nativeDialogs.js';
import { createSafeStorageSecretStore } from './safeStorageSecretStore.js';
import { registerServiceIpc } from './serviceIpc.js';
import { createUtilityProcessSpawner } from './utilityWorkerSpawner.js';
import { APP_SCHEME, APP_URL, hardenContents, hardenSession, mainWindowOptions } from './windowSecurity.js';

const paths = appPaths(path.dirname(fileURLToPath(import.meta.url)), app.isPackaged, process.resourcesPath);
// The engine (here and in its utility process) finds the model catalogue and bundled models here.
process.env.CRISP_RESOURCES_DIR ??= paths.resources;

// Privileged before "ready": a standard, secure scheme gives the page a real origin for the CSP.
protocol.registerSchemesAsPrivileged([
  { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
]);

let win: BrowserWindow | null = null;
let service: ServiceHandle | null = null;
// Files from the command line, a second launch or macOS's open-file; held until the service is up.
const launches = createLaunchHandler((message) => dialog.showErrorBox('Crisp', message));

function createWindow(): BrowserWindow {
  const w = new BrowserWindow(mainWindowOptions(paths.preload, paths.icon));
  w.once('ready-to-show', () => w.show());
  w.on('closed', () => {
    if (win === w) win = null;
  });
  void w.loadURL(APP_URL);
  return w;
}

async function start(): Promise<void> {
  hardenSession(session.defaultSession);
  protocol.handle(APP_SCHEME, createAppProtocolHandler(paths.renderer));
  app.on('web-contents-created', (_e, contents) => hardenContents(contents, (url) => void shell.openExternal(url)));

  const userData = app.getPath('userData');
  const svc = await createService({
    dataDir: userData,
    secrets: createSafeStorageSecretStore(safeStorage, path.join(userData, 'secrets.json')),
    spawner: createUtilityProcessSpawner(
      (modulePath, args, options) => utilityProcess.fork(modulePath, args, options),
      paths.engineWorker,
      process.env,
    ),
    revealOutput: (file) => {
      shell.showItemInFolder(file);
      return true;
    },
    // openPath answers '' on success, otherwise the OS's reason.
    openOutput: async (file) => (await shell.openPath(file)) === '',
    openFolder: async (folder) => (await shell.openPath(folder)) === '',
  });
  service = svc;

  const dialogs = createNativeDialogs((options) =>
    win ? dialog.showOpenDialog(win, options) : dialog.showOpenDialog(options),
  );
  registerServiceIpc(ipcMain, svc, {
    pickImages: () => dialogs.pickImages(),
    pickInputFolder: () => dialogs.pickInputFolder(),
    pickOutputFolder: () => dialogs.pickOutputFolder(),
    startDrag: createDragOut(svc, (file) => nativeImage.createFromPath(file).resize({ width: 64 })),
  });

  const report = (e: unknown) => dialog.showErrorBox('Crisp', e instanceof Error ? e.message : String(e));
  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      appMenuTemplate(
        {
          addImages: () =>
            void dialogs
              .pickImages()
              .then((p) => (p.length ? svc.addPaths(p) : undefined))
              .catch(report),
          addFolder: () =>
            void dialogs
              .pickInputFolder()
              .then((f) => (f ? svc.addPaths([f], { recursive: true }) : undefined))
              .catch(report),
          chooseOutputFolder: () =>
            void dialogs
              .pickOutputFolder()
              .then((f) => (f ? svc.updateSettings({ outputFolder: f }) : undefined))
              .catch(report),
          upscale: () => void svc.start().catch(report),
          stop: () => void svc.cancel().catch(report),
          openDocs: () => void shell.openExternal('https://github.com/crisp-upscaler/crisp#readme'),
        },
        process.platform,
      ),
    ),
  );

  followBatch(
    svc,
    () => win,
    (title, body) => {
      if (Notification.isSupported()) new Notification({ title, body }).show();
    },
    (count) => app.setBadgeCount(count),
  );

  win = createWindow();
  await launches.ready(svc);
}

if (!app.requestSingleInstanceLock()) {
  // A second launch hands over to the first window (see 'second-instance') and leaves.
  app.quit();
} else {
  // This launch's own files ("Open with", the context-menu entry, `crisp-desktop photo.jpg`).
  void launches.open(parseLaunchArgs(process.argv, process.cwd(), app.isPackaged));
  app.on('second-instance', (_event, argv: string[], workingDirectory: string) => {
    void launches.open(parseLaunchArgs(argv, workingDirectory, app.isPackaged));
    if (!win) return;
    if (win.isMinimized()) win.restore();
    win.focus();
  });
  // macOS: files dropped on the Dock icon or opened with Crisp from the Finder (may come before 'ready').
  app.on('open-file', (event, file: string) => {
    event.preventDefault();
    void launches.open({ paths: [file], start: false });
  });
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  app.on('activate', () => {
    if (!win && service) win = createWindow();
  });
  let closing = false;
  app.on('before-quit', (event) => {
    // Flush the queue and stop the engine process before exiting, once.
    if (closing || !service) return;
    closing = true;
    event.preventDefault();
    void service.close().finally(() => app.quit());
  });
  app.whenReady().then(start, (e: unknown) => {
    dialog.showErrorBox('Crisp could not start', e instanceof Error ? e.message : String(e));
    app.exit(1);
  });
}
