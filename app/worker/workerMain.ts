/**
 * The engine worker's logic, apart from its process entry (engineWorker.ts) so tests can drive it over any
 * channel. Each upscale is checked (localJob.ts) and handed to core directly: no task record, no meter, no
 * status polling; core's own progress events are forwarded as they come.
 */
import path from 'node:path';
import { crispError } from '../../engine/contract/index.js';
import {
  createCore,
  loadInference,
  modelSearchDirs,
  toWire,
  type Core,
  type ExecutionProviderChoice,
  type TaskModelSources,
} from '../../engine/core/index.js';
import { resolveLimits, type EngineLimits } from '../../engine/service/index.js';
import { localJob } from './localJob.js';
import type { ParentChannel } from './parentChannel.js';
import type { LocalUpscale, ToWorker, WorkerEngineOptions } from './protocol.js';

// This module is the local engine: onnxruntime loads with it (only the engine worker process and tests import
// it), so init can answer which providers this runtime offers at once.
const { autoProviders } = await loadInference();

export interface WorkerMain {
  handle(msg: ToWorker): void;
  /** Settles once every job in flight has answered (tests). */
  idle(): Promise<void>;
}

export function startWorkerMain(
  channel: Pick<ParentChannel, 'send' | 'onMessage'>,
  exit: (code: number) => void = (c) => process.exit(c),
): WorkerMain {
  let ctx: { options: WorkerEngineOptions; sources: TaskModelSources; limits: EngineLimits; core: Core } | undefined;
  const jobs = new Map<string, AbortController>();
  const inFlight = new Set<Promise<void>>();

  function init(options: WorkerEngineOptions): void {
    try {
      const modelDirs = options.modelDirs ?? modelSearchDirs();
      const sources: TaskModelSources = {
        modelDirs,
        ...(options.customModelsDir !== undefined ? { customModelsDir: path.resolve(options.customModelsDir) } : {}),
        denoiseCacheDir: path.join(path.resolve(options.dataDir), 'models-cache'),
      };
      const core = createCore({
        executionProvider: (options.executionProvider ?? 'auto') as ExecutionProviderChoice,
        ...(options.threads ? { threads: options.threads } : {}),
        ...(options.precision ? { precision: options.precision } : {}),
        models: sources,
      });
      core.warm();
      ctx = { options, sources, limits: resolveLimits(), core };
      channel.send({ type: 'ready', devices: autoProviders() });
    } catch (e) {
      channel.send({ type: 'initFailed', error: toWire(e) });
    }
  }

  async function upscale(msg: LocalUpscale): Promise<void> {
    const { id } = msg;
    const abort = new AbortController();
    jobs.set(id, abort);
    try {
      if (!ctx) throw new Error('the engine is not ready');
      const job = await localJob(msg, ctx);
      abort.signal.throwIfAborted();
      // One throttle for the app: a message when the whole percent or the ETA changes, not per tick.
      let last = -1;
      let lastEta: number | undefined;
      const result = await ctx.core.upscaleFile(job, {
        signal: abort.signal,
        onEncoding: () => channel.send({ type: 'encoding', id }),
        onProgress: (fraction, etaSeconds) => {
          const percent = Math.floor(fraction * 100);
          if (percent <= last && etaSeconds === lastEta) return;
          last = Math.max(last, percent);
          lastEta = etaSeconds;
          channel.send({ type: 'progress', id, fraction, ...(etaSeconds !== undefined ? { etaSeconds } : {}) });
        },
      });
      channel.send({ type: 'done', id, result });
    } catch (e) {
      // Typed by what happened (this job was asked to stop), never by the wording of the error; anything else
      // goes as core raised it (code, status, params): the app words it (localBackend.ts).
      channel.send({ type: 'failed', id, error: toWire(abort.signal.aborted ? crispError('cancelled') : e) });
    } finally {
      jobs.delete(id);
    }
  }

  return {
    handle(msg) {
      switch (msg.type) {
        case 'init':
          init(msg.options);
          break;
        case 'upscale': {
          const p = upscale(msg);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
          break;
        }
        case 'cancel':
          jobs.get(msg.id)?.abort(new Error('Cancelled'));
          break;
        case 'shutdown':
          void (async () => {
            for (const a of jobs.values()) a.abort(new Error('Cancelled'));
            await Promise.allSettled(inFlight);
            await ctx?.core.close().catch(() => undefined);
            exit(0);
          })();
          break;
      }
    },
    idle: async () => {
      await Promise.allSettled(inFlight);
    },
  };
}
