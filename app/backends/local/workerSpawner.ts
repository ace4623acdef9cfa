/**
 * How the engine worker process is started. Node (CLI, `crisp ui`, tests): child_process.fork of the compiled
 * worker (built CLI) or of the TypeScript one with tsx's loader (sources). Electron supplies its own WorkerSpawner built on utilityProcess.fork; nothing else changes.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FromWorker, ToWorker } from '../../worker/protocol.js';

export interface WorkerExit {
  code: number | null;
  signal: string | null;
}

export interface WorkerHandle {
  readonly pid: number | undefined;
  send(msg: ToWorker): void;
  onMessage(fn: (msg: FromWorker) => void): void;
  /** Called once, however the process ended (crash, kill, exit). */
  onExit(fn: (exit: WorkerExit) => void): void;
  kill(): void;
}

export interface WorkerSpawner {
  spawn(): WorkerHandle;
}

/** The built CLI (out/cli, CRISP_BUILT set by scripts/buildCli.mjs) forks its compiled worker beside it; the sources fork the TypeScript one through tsx. */
const BUILT = process.env.CRISP_BUILT === '1';
// Path arithmetic, not `new URL(…, import.meta.url)`: the renderer's jsdom tests replace URL with one that
// refuses file: bases, and they start real engine processes too.
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ENGINE_WORKER_ENTRY = BUILT
  ? path.join(HERE, 'engineWorker.js')
  : path.join(HERE, '../../worker/engineWorker.ts');

export function createForkSpawner(
  opts: { entry?: string; execArgv?: string[]; env?: NodeJS.ProcessEnv } = {},
): WorkerSpawner {
  return {
    spawn(): WorkerHandle {
      const child = fork(opts.entry ?? ENGINE_WORKER_ENTRY, [], {
        execArgv: opts.execArgv ?? (BUILT ? [] : ['--import', 'tsx']),
        env: opts.env ?? process.env,
        // The worker's stdout is not ours to print; native libraries' warnings still reach stderr.
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
        serialization: 'advanced',
      });
      let exited = false;
      const exitListeners: ((e: WorkerExit) => void)[] = [];
      const onEnd = (e: WorkerExit) => {
        if (exited) return;
        exited = true;
        for (const fn of exitListeners) fn(e);
      };
      child.on('exit', (code, signal) => onEnd({ code, signal }));
      child.on('error', () => onEnd({ code: null, signal: null }));
      return {
        pid: child.pid,
        send: (msg) => {
          if (child.connected) child.send(msg);
        },
        onMessage: (fn) => child.on('message', (m) => fn(m as FromWorker)),
        onExit: (fn) => exitListeners.push(fn),
        kill: () => {
          child.kill('SIGKILL');
        },
      };
    },
  };
}
