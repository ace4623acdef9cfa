/**
 * The worker's side of the channel to the app: Node's IPC (child_process.fork) or Electron's
 * utilityProcess parentPort. The engine worker is written once against this.
 */
import type { FromWorker, ToWorker } from './protocol.js';

export interface ParentChannel {
  /** Sends to the app; a no-op once the app is gone (nobody is left to read it). */
  send(msg: FromWorker): void;
  onMessage(fn: (msg: ToWorker) => void): void;
  /** Called once if the app goes away without asking this process to stop (it was killed, or crashed). */
  onClose(fn: () => void): void;
}

interface ElectronParentPort {
  postMessage(msg: unknown): void;
  on(event: 'message', fn: (e: { data: unknown }) => void): void;
}

export function parentChannel(): ParentChannel {
  const port = (process as unknown as { parentPort?: ElectronParentPort }).parentPort;
  if (port) {
    return {
      send: (msg) => port.postMessage(msg),
      onMessage: (fn) => port.on('message', (e) => fn(e.data as ToWorker)),
      // Electron ends a utility process with its app.
      onClose: () => undefined,
    };
  }
  if (!process.send) throw new Error('the engine worker must be started with an IPC channel');
  return {
    // Never a throw or an 'error' event when the app has died in between: with no listener, Node would end this
    // process with an ERR_IPC_CHANNEL_CLOSED stack on the terminal the app shared with it.
    send: (msg) => {
      if (process.connected) process.send?.(msg, undefined, undefined, () => undefined);
    },
    onMessage: (fn) => process.on('message', (m) => fn(m as ToWorker)),
    onClose: (fn) => process.once('disconnect', fn),
  };
}
