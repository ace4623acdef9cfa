/**
 * Builds `window.crisp` from the method table (SERVICE_METHODS) and DESKTOP_METHODS over two injected functions, so the
 * object can be tested in Node without Electron. No channel name or ipcRenderer escapes this file:
 * the renderer gets plain async methods.
 */
import type { CrispService, ServiceEvent } from '../../app/service/crispService.js';
import { SERVICE_METHODS } from '../../app/service/methodTable.js';
import type { CallResult } from '../shared/ipcChannels.js';
import type { CrispDesktopApi, DesktopMethod } from './desktopApi.js';

export interface PreloadTransport {
  callService(method: string, args: unknown[]): Promise<CallResult>;
  callDesktop(method: DesktopMethod, ...args: string[]): Promise<CallResult>;
  /** Starts forwarding; returns a function that stops it. */
  listen(fn: (event: ServiceEvent) => void): () => void;
  pathForFile(file: File): string;
}

function unwrap(result: CallResult): unknown {
  if (result.ok) return result.value;
  // The code travels with the message, as over crisp ui's bridge (renderer/src/i18n/errorText.ts reads it).
  throw Object.assign(new Error(result.message), result.code ? { code: result.code } : {});
}

export function buildDesktopApi(transport: PreloadTransport): CrispDesktopApi {
  const methods = Object.fromEntries(
    SERVICE_METHODS.map((m) => [m, async (...args: unknown[]) => unwrap(await transport.callService(m, args))]),
  ) as unknown as Omit<CrispService, 'subscribe'>;

  const listeners = new Set<(event: ServiceEvent) => void>();
  let stop: (() => void) | null = null;

  const api: CrispDesktopApi = {
    ...methods,
    subscribe(listener) {
      listeners.add(listener);
      stop ??= transport.listen((event) => {
        for (const l of [...listeners]) l(event);
      });
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && stop) {
          stop();
          stop = null;
        }
      };
    },
    desktop: {
      pathForFile: (file) => transport.pathForFile(file),
      pickImages: async () => unwrap(await transport.callDesktop('pickImages')) as string[],
      pickInputFolder: async () => unwrap(await transport.callDesktop('pickInputFolder')) as string | null,
      pickOutputFolder: async () => unwrap(await transport.callDesktop('pickOutputFolder')) as string | null,
      // Fire and forget: the drag is the OS's from here on; a refusal has nothing to show.
      startDrag: (id) => void transport.callDesktop('startDrag', id).catch(() => undefined),
    },
  };
  // contextBridge copies the object; freezing it here keeps the page from patching it in tests too.
  return Object.freeze(api);
}
