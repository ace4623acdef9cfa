/**
 * The worker's side of the channel to the app: Node's IPC (child_process.fork) or Electron's
 * utilityProcess parentPort. The engine worker is written once against this.
 */
import type { FromWorker, ToWorker } from './protocol.js';

export interface ParentChannel {
  send(msg: FromWorker): void;
  onMessage(fn: (msg: ToWorker) => void): void;
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
    };
  }
  if (!process.send) throw new Error('the engine worker must be started with an IPC channel');
  return {
    send: (msg) => process.send?.(msg),
    onMessage: (fn) => process.on('message', (m) => fn(m as ToWorker)),
  };
}
