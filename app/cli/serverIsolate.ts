/**
 * The long-running server commands (`crisp serve`, `crisp worker`) run in a worker thread whose V8 heap is sized
 * for a server; the process's main thread only relays (stop signals in, the exit status out; Node pipes the
 * worker's stdout and stderr to the process's).
 *
 * Why: after a burst of status polls V8 shrinks the old generation's headroom on the server's ~19 MB heap, and
 * from then on every upload drives a major GC every 15–20 MB of request bodies — 3 to 5 per 64 MiB, about a
 * fifth of an upload's CPU (the socket's chunks are external memory that only a GC frees). With the old
 * generation's initial limit at 64 MB there are none: uploads at 0.95–0.97× a bare Node server instead of
 * 0.79–0.87×, status polls at 0.85× instead of 0.74–0.77× (docs/benchmarks.md, `npm run bench -- --only server`).
 * V8 sizes a heap when its isolate is created, so the main thread (created before any code of ours runs) cannot
 * be given it; a worker created after `v8.setFlagsFromString` can. Same process, same PID: a kill -9, the data
 * folder's owner lock and `ps` see one server as before.
 */
import v8 from 'node:v8';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/** V8 flags of the server isolate (read when the worker's isolate is created). */
export const SERVER_HEAP_FLAGS = '--initial-old-space-size=64';
/** The commands that run in it. */
const SERVER_COMMANDS = new Set(['serve', 'worker']);
/** Set to 0 to run a server command on the main thread (diagnostics: compare the two). */
export const SERVER_ISOLATE_ENV = 'CRISP_SERVER_ISOLATE';

type StopSignal = 'SIGINT' | 'SIGTERM';
const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM'];

/**
 * Whether `argv` (process.argv) names a server command that should move to the server isolate: only from the
 * main thread of the built CLI (`entry` is a .js file; tsx's sources run in place).
 */
export function wantsServerIsolate(argv: readonly string[], entry: URL, rootFlags: ReadonlySet<string>): boolean {
  if (!isMainThread || process.env[SERVER_ISOLATE_ENV] === '0' || !entry.pathname.endsWith('.js')) return false;
  const command = argv.slice(2).find((a) => !rootFlags.has(a));
  return command !== undefined && SERVER_COMMANDS.has(command);
}

/** Runs the CLI `entry` with `argv` in the server isolate; resolves to its exit status. */
export function runInServerIsolate(entry: URL, argv: readonly string[]): Promise<number> {
  v8.setFlagsFromString(SERVER_HEAP_FLAGS);
  const worker = new Worker(entry, { argv: argv.slice(2), workerData: { serverHeapFlags: SERVER_HEAP_FLAGS } });
  // The first SIGINT or SIGTERM asks the server to stop as before (running tasks end or are handed back); a second
  // one finds no handler and ends the process, as it did when the server ran here.
  for (const signal of STOP_SIGNALS) process.once(signal, () => worker.postMessage({ stop: signal }));
  return new Promise((resolve) => {
    // An exception nothing caught ends the server as it would have ended the process: its stack on stderr, status 1.
    worker.on('error', (e) => process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`));
    worker.on('exit', (code) => resolve(code));
  });
}

/** Calls `stop` on the first SIGINT or SIGTERM, whether the server runs on the main thread or in the server isolate. */
export function onStopSignal(stop: (signal: StopSignal) => void): void {
  if (isMainThread || !parentPort) {
    for (const signal of STOP_SIGNALS) process.once(signal, () => stop(signal));
    return;
  }
  const port = parentPort;
  const onMessage = (m: unknown) => {
    const signal = (m as { stop?: unknown } | null)?.stop;
    if (signal !== 'SIGINT' && signal !== 'SIGTERM') return;
    port.off('message', onMessage);
    stop(signal);
  };
  port.on('message', onMessage);
  // The port must not keep the server alive by itself: the server's own handles do.
  port.unref();
}

/** The server isolate's V8 flags when this code runs in it (for the server's start-up log line), else undefined. */
export function serverIsolateFlags(): string | undefined {
  if (isMainThread) return undefined;
  const flags = (workerData as { serverHeapFlags?: unknown } | null)?.serverHeapFlags;
  return typeof flags === 'string' ? flags : undefined;
}
