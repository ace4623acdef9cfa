/**
 * The local backend: the upscaling core runs in a separate worker process, so a native crash, GPU fault or OOM
 * kill fails the current item with a clear message and never takes the app down; the next item starts a
 * fresh worker. One item runs its model at a time; the next one is sent as soon as the current one says it is
 * only encoding, so its decode and inference overlap that encode in the engine (core's pool allows exactly that).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Mutex } from '../../../engine/service/index.js';
import type { AccountView } from '../../service/crispService.js';
import type { FromWorker, WorkerEngineOptions } from '../../worker/protocol.js';
import type { UpscaleBackend, UpscaleOutcome, UpscaleRequest } from '../backend.js';
import { createForkSpawner, type WorkerExit, type WorkerHandle, type WorkerSpawner } from './workerSpawner.js';
import { CrispError, crispError, hasErrorCode, isCrispError } from '../../../engine/contract/index.js';
import { fromWire, type WireError } from '../../../engine/core/index.js';
import { ioError } from '../../jobs/userErrors.js';

export interface LocalBackendOptions extends WorkerEngineOptions {
  spawner?: WorkerSpawner;
  /** How long a worker may take to load the engine before it counts as failed. */
  startupTimeoutMs?: number;
  /** After a cancel, how long the worker gets to stop the task before it is killed. */
  cancelGraceMs?: number;
}

export interface LocalBackend extends UpscaleBackend {
  /** The current worker's process id (diagnostics, tests); undefined when none runs. */
  workerPid(): number | undefined;
  devices(): Promise<string[]>;
}

interface Pending {
  onMessage(msg: FromWorker): void;
  onExit(exit: WorkerExit): void;
}

interface Worker {
  handle: WorkerHandle;
  exited: boolean;
  ready: Promise<void>;
  pending: Map<string, Pending>;
  /** From its ready message: the providers its onnxruntime can use here, best first. */
  devices?: string[];
}

function describeExit(e: WorkerExit): string {
  if (e.signal) return `it was stopped by ${e.signal}`;
  if (e.code !== null) return `it exited with code ${e.code}`;
  return 'it could not be started';
}

/**
 * A failure the engine process sent (core's error wire) as the person's error. A catalogued one keeps the
 * code, status and params core gave it; a refusal's sentence is its detail (there is no HTTP answer here to
 * put "Bad Request: " in front). A file-system error gets its row; anything else is upscale-failed, naming the
 * image. Never a service's code: nothing local says "the service".
 */
export function localFailure(wire: WireError, inputName: string): Error {
  const e = fromWire(wire);
  if (hasErrorCode(e, 'bad-request') && e.params?.detail !== undefined)
    return new CrispError('bad-request', e.params.detail, {
      params: e.params,
      ...(e.status !== undefined ? { status: e.status } : {}),
    });
  if (isCrispError(e)) return e;
  const io = ioError(e, { action: 'upscale', path: inputName });
  if (io) return io;
  const detail = (e.message.split('\n')[0] ?? '').trim().slice(0, 300) || 'unknown error';
  return crispError('upscale-failed', { name: inputName, detail });
}

export function createLocalBackend(opts: LocalBackendOptions): LocalBackend {
  const spawner = opts.spawner ?? createForkSpawner();
  const lock = new Mutex();
  let worker: Worker | undefined;
  let closed = false;

  function startWorker(): Worker {
    const handle = spawner.spawn();
    const pending = new Map<string, Pending>();
    let settleReady: { resolve: () => void; reject: (e: Error) => void } | undefined;
    const ready = new Promise<void>((resolve, reject) => (settleReady = { resolve, reject }));
    const timer = setTimeout(() => {
      settleReady?.reject(new CrispError('engine-crashed', 'The local engine did not start in time.'));
      handle.kill();
    }, opts.startupTimeoutMs ?? 60_000);
    const w: Worker = { handle, ready, pending, exited: false };
    handle.onMessage((msg) => {
      if (msg.type === 'ready') {
        clearTimeout(timer);
        w.devices = msg.devices;
        settleReady?.resolve();
      } else if (msg.type === 'initFailed') {
        clearTimeout(timer);
        // A catalogued reason (an execution provider that is not there) keeps its code; anything else is a crash.
        const e = fromWire(msg.error);
        settleReady?.reject(
          new CrispError(
            isCrispError(e) ? e.code : 'engine-crashed',
            `The local engine could not start: ${e.message}`,
            {
              ...(isCrispError(e) && e.params ? { params: e.params } : {}),
            },
          ),
        );
        handle.kill();
      } else {
        pending.get(msg.id)?.onMessage(msg);
      }
    });
    handle.onExit((exit) => {
      w.exited = true;
      clearTimeout(timer);
      if (worker === w) worker = undefined;
      settleReady?.reject(
        new CrispError('engine-crashed', `The local engine could not start (${describeExit(exit)}).`),
      );
      for (const p of pending.values()) p.onExit(exit);
      pending.clear();
    });
    const { spawner: _s, startupTimeoutMs: _t, cancelGraceMs: _c, ...engineOptions } = opts;
    handle.send({ type: 'init', options: engineOptions });
    return w;
  }

  async function ensureWorker(): Promise<Worker> {
    if (closed) throw crispError('shutting-down');
    worker ??= startWorker();
    const w = worker;
    await w.ready;
    return w;
  }

  async function run(req: UpscaleRequest, onEncoding: () => void): Promise<UpscaleOutcome> {
    if (req.signal?.aborted) throw crispError('cancelled');
    const w = await ensureWorker();
    const id = randomUUID();
    const result = await new Promise<Extract<FromWorker, { type: 'done' }>>((resolve, reject) => {
      let killTimer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        w.handle.send({ type: 'cancel', id });
        // A worker stuck in native code cannot honour a cancel; it is killed, and the next item gets a fresh one.
        killTimer = setTimeout(() => w.handle.kill(), opts.cancelGraceMs ?? 10_000);
      };
      const finish = () => {
        clearTimeout(killTimer);
        req.signal?.removeEventListener('abort', onAbort);
        w.pending.delete(id);
      };
      w.pending.set(id, {
        onMessage(msg) {
          // Whole percents below 100 (100 is the written file itself).
          if (msg.type === 'progress') req.onProgress?.(Math.min(99, Math.floor(msg.fraction * 100)), msg.etaSeconds);
          else if (msg.type === 'encoding') onEncoding();
          else if (msg.type === 'done') {
            finish();
            resolve(msg);
          } else if (msg.type === 'failed') {
            finish();
            const e = localFailure(msg.error, req.inputName);
            reject(req.signal?.aborted || hasErrorCode(e, 'cancelled') ? crispError('cancelled') : e);
          }
        },
        onExit(exit) {
          finish();
          if (req.signal?.aborted) return reject(crispError('cancelled'));
          reject(
            new CrispError(
              'engine-crashed',
              `The local engine stopped unexpectedly while upscaling ${req.inputName} (${describeExit(exit)}; ` +
                'possibly out of memory or a graphics driver fault). The next image starts a fresh engine.',
            ),
          );
        },
      });
      req.signal?.addEventListener('abort', onAbort, { once: true });
      w.handle.send({
        type: 'upscale',
        id,
        inputPath: path.resolve(req.inputPath),
        inputName: req.inputName,
        // UpscaleSettings are named after the contract's start-task fields (plus the job's face), so they go as they are.
        settings: req.settings,
        // The engine writes the output there itself (temp name in that folder, then rename): one write, no copy.
        outputPath: path.resolve(req.outputPath),
      });
    });
    if (req.signal?.aborted) throw crispError('cancelled');
    req.onProgress?.(100);
    return {
      outputPath: req.outputPath,
      dimensions: { width: result.result.width, height: result.result.height },
      fileSize: result.result.bytes,
      creditsDeducted: 0,
      warnings: result.result.warnings,
      ...(result.result.faces
        ? { faces: { found: result.result.faces.found, enhanced: result.result.faces.enhanced } }
        : {}),
      device: {
        provider: result.result.provider,
        precision: result.result.precision,
        ...(result.result.providerReason ? { reason: result.result.providerReason } : {}),
      },
    };
  }

  return {
    mode: 'local',
    // The turn passes on when the image is only encoding (or has ended), not when its file is written.
    upscale: (req) =>
      new Promise<UpscaleOutcome>((resolve, reject) => {
        void lock.run(
          () =>
            new Promise<void>((turnOver) => {
              const encoding = () => {
                turnOver();
                req.onEncoding?.();
              };
              void run(req, encoding).then(resolve, reject).finally(turnOver);
            }),
        );
      }),
    estimate: async () => 0,
    getAccount: async (): Promise<AccountView> => ({ available: false }),
    devices: async () => (await ensureWorker()).devices ?? [],
    workerPid: () => worker?.handle.pid,
    async close() {
      closed = true;
      const w = worker;
      worker = undefined;
      if (!w || w.exited) return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          w.handle.kill();
          resolve();
        }, 5_000);
        w.handle.onExit(() => {
          clearTimeout(t);
          resolve();
        });
        w.handle.send({ type: 'shutdown' });
      });
    },
  };
}
