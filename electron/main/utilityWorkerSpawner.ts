/**
 * The app layer's WorkerSpawner on Electron's utilityProcess: the engine (onnxruntime, sharp) runs in
 * its own OS process, so a native crash or out-of-memory kill ends that process, never the window.
 * The worker itself (app/worker/engineWorker.ts) already speaks to process.parentPort.
 */
import type { WorkerExit, WorkerHandle, WorkerSpawner } from '../../app/backends/local/workerSpawner.js';
import type { FromWorker, ToWorker } from '../../app/worker/protocol.js';

/** The slice of Electron's UtilityProcess this needs. */
export interface UtilityChild {
  readonly pid: number | undefined;
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): void;
  on(event: 'exit', listener: (code: number) => void): void;
  kill(): boolean;
}

export type UtilityFork = (
  modulePath: string,
  args: string[],
  options: { serviceName: string; stdio: 'ignore' | 'inherit' | 'pipe'; env?: NodeJS.ProcessEnv },
) => UtilityChild;

export function createUtilityProcessSpawner(
  fork: UtilityFork,
  workerEntry: string,
  env?: NodeJS.ProcessEnv,
): WorkerSpawner {
  return {
    spawn(): WorkerHandle {
      const child = fork(workerEntry, [], { serviceName: 'Crisp engine', stdio: 'inherit', ...(env ? { env } : {}) });
      let exited = false;
      const exitListeners: ((e: WorkerExit) => void)[] = [];
      child.on('exit', (code) => {
        if (exited) return;
        exited = true;
        for (const fn of exitListeners) fn({ code, signal: null });
      });
      return {
        pid: child.pid,
        send: (msg: ToWorker) => {
          if (!exited) child.postMessage(msg);
        },
        onMessage: (fn) => child.on('message', (m) => fn(m as FromWorker)),
        onExit: (fn) => exitListeners.push(fn),
        kill: () => {
          child.kill();
        },
      };
    },
  };
}
