/**
 * Main-process end of the preload's transport. Every call is checked twice before it reaches the app
 * layer: the sender must be our own page (app://crisp), and the arguments must match the method's zod
 * schema (app/service/serviceArgs.ts, shared with `crisp ui`). Events are forwarded only to windows that
 * subscribed.
 */
import type { CrispService, ServiceEvent } from '../../app/service/crispService.js';
import { errorCodeOf } from '../../app/jobs/userErrors.js';
import { callServiceMethod } from '../../app/service/serviceArgs.js';
import { DESKTOP_METHODS, type DesktopMethod } from '../preload/desktopApi.js';
import { IPC, type CallResult } from '../shared/ipcChannels.js';
import { isAppUrl } from './windowSecurity.js';

export interface IpcSender {
  id: number;
  send(channel: string, payload: unknown): void;
  isDestroyed(): boolean;
  once(event: 'destroyed', fn: () => void): void;
  /** Electron's webContents.startDrag; the icon is a NativeImage made by the caller. */
  startDrag?(item: { file: string; icon: never }): void;
}

export interface IpcEventLike {
  sender: IpcSender;
  senderFrame: { url: string } | null;
}

/** The slice of ipcMain used here. */
export interface IpcMainLike {
  handle(channel: string, handler: (event: IpcEventLike, ...args: unknown[]) => Promise<CallResult>): void;
  on(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => void): void;
}

/** Desktop calls take at most one short string argument (an item id); anything else is refused. */
export type DesktopHandlers = Record<DesktopMethod, (sender: IpcSender, arg?: string) => Promise<unknown>>;

const UNTRUSTED: CallResult = { ok: false, message: 'This call did not come from the Crisp window.' };

async function settle(work: () => Promise<unknown>): Promise<CallResult> {
  try {
    return { ok: true, value: await work() };
  } catch (e) {
    const code = errorCodeOf(e);
    return { ok: false, message: e instanceof Error ? e.message : String(e), ...(code ? { code } : {}) };
  }
}

export function registerServiceIpc(ipc: IpcMainLike, service: CrispService, desktop: DesktopHandlers): void {
  const trusted = (e: IpcEventLike) => !!e.senderFrame && isAppUrl(e.senderFrame.url);

  ipc.handle(IPC.call, async (event, method, args) => {
    if (!trusted(event)) return UNTRUSTED;
    return settle(() => callServiceMethod(service, method, args));
  });

  ipc.handle(IPC.desktop, async (event, method, arg) => {
    if (!trusted(event)) return UNTRUSTED;
    if (typeof method !== 'string' || !(DESKTOP_METHODS as readonly string[]).includes(method)) {
      return { ok: false, message: 'Unknown desktop call.' };
    }
    if (arg !== undefined && (typeof arg !== 'string' || arg.length === 0 || arg.length > 200))
      return { ok: false, message: 'Invalid desktop call.' };
    return settle(() => desktop[method as DesktopMethod](event.sender, arg));
  });

  const subscriptions = new Map<number, () => void>();
  ipc.on(IPC.subscribe, (event, on) => {
    if (!trusted(event) || typeof on !== 'boolean') return;
    const { sender } = event;
    subscriptions.get(sender.id)?.();
    subscriptions.delete(sender.id);
    if (!on) return;
    const unsubscribe = service.subscribe((e: ServiceEvent) => {
      if (!sender.isDestroyed()) sender.send(IPC.event, e);
    });
    subscriptions.set(sender.id, unsubscribe);
    sender.once('destroyed', () => {
      subscriptions.get(sender.id)?.();
      subscriptions.delete(sender.id);
    });
  });
}
