/**
 * The engine worker process: runs createEngine so that a native crash, GPU fault or out-of-memory kill
 * takes down this process only, never the app. One task at a time, driven through the contract
 * (startTask, getTaskStatus), reporting progress and the finished output's path to the app.
 */
import { LOCAL_CALLER } from '../../engine/api.js';
import { isContractError, parseProgress } from '../../engine/contract/index.js';
import { createEngine, type Engine } from '../../engine/engine.js';
import type { ExecutionProviderChoice } from '../../engine/inference/index.js';
import { parentChannel } from './parentChannel.js';
import type { ToWorker, WorkerEngineOptions } from './protocol.js';

const channel = parentChannel();
let engine: Engine | undefined;
const tasks = new Map<string, string>(); // jobId → taskId
/** Cancels that arrived before their task existed. */
const cancelled = new Set<string>();

async function init(options: WorkerEngineOptions): Promise<void> {
  try {
    engine = await createEngine({
      dataDir: options.dataDir,
      ...(options.modelDirs ? { modelDirs: options.modelDirs } : {}),
      ...(options.customModelsDir ? { customModelsDir: options.customModelsDir } : {}),
      executionProvider: (options.executionProvider ?? 'auto') as ExecutionProviderChoice,
      ...(options.threads ? { threads: options.threads } : {}),
      ...(options.tileSize ? { tileSize: options.tileSize } : {}),
      ...(options.faces ? { faces: options.faces } : {}),
      ...(options.precision ? { precision: options.precision } : {}),
      // Outputs are written straight to their destination; task records need not outlive a session.
      limits: { fileTtlMs: 30 * 60_000 },
    });
    channel.send({ type: 'ready' });
  } catch (e) {
    channel.send({ type: 'initFailed', message: e instanceof Error ? e.message : String(e) });
  }
}

async function upscale(msg: Extract<ToWorker, { type: 'upscale' }>): Promise<void> {
  const { jobId } = msg;
  try {
    if (!engine) throw new Error('the engine is not ready');
    // passes is not a start-task field but the engine's in-process extension.
    const { passes, preModel, ...fields } = msg.fields;
    const { taskId } = await engine.startTask(LOCAL_CALLER, {
      fields,
      ...(passes === 2 ? { passes: 2 as const } : {}),
      ...(typeof preModel === 'string' && preModel !== '' ? { preModel } : {}),
      file: [{ originalFileName: msg.inputName, data: { path: msg.inputPath } }],
      outputPath: msg.outputPath,
    });
    tasks.set(jobId, taskId);
    if (cancelled.has(jobId)) await engine.cancelTask(LOCAL_CALLER, taskId);
    let last = -1;
    let lastEta: number | undefined;
    for (;;) {
      const s = await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId } });
      const p = parseProgress(s.progress);
      if (p > last || (s.etaSeconds !== undefined && s.etaSeconds !== lastEta)) {
        last = Math.max(last, p);
        lastEta = s.etaSeconds;
        channel.send({
          type: 'progress',
          jobId,
          percent: last,
          ...(s.etaSeconds !== undefined ? { etaSeconds: s.etaSeconds } : {}),
        });
      }
      if (s.status === 'PROCESSING_FAILED') {
        // Typed by what happened (this job was asked to stop), never by the wording of the task's error.
        channel.send({
          type: 'failed',
          jobId,
          message: s.error ?? 'Upscaling failed.',
          cancelled: cancelled.has(jobId),
        });
        return;
      }
      if (s.status === 'PROCESSED') {
        const file = s.files[0];
        if (!file) throw new Error('the engine produced no output');
        const out = await engine.openOutput(LOCAL_CALLER, taskId, file.fileName);
        channel.send({ type: 'done', jobId, outputPath: out.path, file: out.file, warnings: s.warnings ?? [] });
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    channel.send({ type: 'failed', jobId, message, ...(isContractError(e) ? { status: e.status } : {}) });
  } finally {
    tasks.delete(jobId);
    cancelled.delete(jobId);
  }
}

channel.onMessage((msg) => {
  switch (msg.type) {
    case 'init':
      void init(msg.options);
      break;
    case 'upscale':
      void upscale(msg);
      break;
    case 'cancel': {
      cancelled.add(msg.jobId);
      const taskId = tasks.get(msg.jobId);
      if (taskId && engine) void engine.cancelTask(LOCAL_CALLER, taskId).catch(() => undefined);
      break;
    }
    case 'shutdown':
      void (async () => {
        await engine?.close().catch(() => undefined);
        process.exit(0);
      })();
      break;
  }
});
