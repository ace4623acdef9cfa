/**
 * The sandboxed preload: exposes exactly one object, `window.crisp` (CrispDesktopApi). It is bundled
 * into a single CommonJS file because sandboxed preloads cannot load other modules.
 */
import { contextBridge, ipcRenderer, webUtils, type IpcRendererEvent } from 'electron';
import type { ServiceEvent } from '../../app/service/crispService.js';
import { IPC, type CallResult } from '../shared/ipcChannels.js';
import { buildDesktopApi } from './buildDesktopApi.js';

const api = buildDesktopApi({
  callService: (method, args) => ipcRenderer.invoke(IPC.call, method, args) as Promise<CallResult>,
  callDesktop: (method, ...args) => ipcRenderer.invoke(IPC.desktop, method, ...args) as Promise<CallResult>,
  listen(fn) {
    const handler = (_e: IpcRendererEvent, event: ServiceEvent) => fn(event);
    ipcRenderer.on(IPC.event, handler);
    ipcRenderer.send(IPC.subscribe, true);
    return () => {
      ipcRenderer.removeListener(IPC.event, handler);
      ipcRenderer.send(IPC.subscribe, false);
    };
  },
  pathForFile: (file) => webUtils.getPathForFile(file),
});

contextBridge.exposeInMainWorld('crisp', api);
