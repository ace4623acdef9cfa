/**
 * A core worker thread: runs jobs sent by the pool (workerPool.ts) — two at most: the next one's inference while
 * the previous one encodes, or two callers' jobs whose tiles' model runs take turns (tileTurns.ts) — with its own
 * onnxruntime sessions (cached here, one Inference per precision), and reports progress, results and
 * failures by message. Cancels arrive as messages too and abort the running job within a tile.
 */
import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createInference, type Inference, type PrecisionRequest } from './inference/index.js';
import { toWire } from './errorWire.js';
import type { CoreWorkerSetup, FromCoreWorker, ToCoreWorker } from './protocol.js';
import { runJob } from './runJob.js';
import { blockAtPoint } from './testGate.js';
import { TileTurns } from './tileTurns.js';

const port = parentPort;
if (!port) throw new Error('coreWorker.ts runs only as a worker thread of the core pool');
const setup = workerData as CoreWorkerSetup;
const send = (m: FromCoreWorker) => port.postMessage(m);

/**
 * On Linux this thread (and the onnxruntime threads it creates, which inherit it) runs at a lower priority
 * than the caller's: on a busy machine the API's event loop and a worker's lease heartbeat are scheduled
 * first, and the image takes what is left. Only this thread's nice value changes (by its thread id), never
 * the process's; elsewhere thread priorities are not settable from Node, and nothing changes.
 */
function yieldToCaller(): void {
  if (process.platform !== 'linux' || !setup.niceness) return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, Math.min(19, os.getPriority(tid) + setup.niceness));
  } catch {
    // Not permitted or not available: the work runs at the caller's priority, as before.
  }
}
yieldToCaller();

const inferences = new Map<PrecisionRequest, Inference>();
function inferenceFor(precision: PrecisionRequest): Inference {
  let i = inferences.get(precision);
  if (!i) {
    i = createInference({
      executionProvider: setup.executionProvider,
      precision,
      ...(setup.threads ? { threads: setup.threads } : {}),
    });
    inferences.set(precision, i);
  }
  return i;
}

const running = new Map<number, AbortController>();
/** The jobs of this thread take their model runs in turn, by key (the pool gives it two only with different keys). */
const turns = new TileTurns();

async function run(id: number, job: ToCoreWorker & { type: 'run' }): Promise<void> {
  const abort = new AbortController();
  running.set(id, abort);
  const seat = turns.join(job.job.turnKey ?? '');
  let firstTile = true;
  try {
    const result = await runJob(
      job.job,
      inferenceFor(job.job.precision ?? setup.precision),
      setup.models,
      abort.signal,
      (fraction, etaSeconds, step) => {
        // A report with a step announces a run; the first tile is done at the first report without one.
        if (firstTile && fraction > 0 && !step) {
          firstTile = false;
          // Test-only (CRISP_TEST_GATE_DIR; a no-op in production): stands for a long CPU-bound step.
          blockAtPoint('core-first-tile');
        }
        send({
          type: 'progress',
          id,
          fraction,
          ...(etaSeconds !== undefined ? { etaSeconds } : {}),
          ...(step ? { step } : {}),
        });
      },
      () => {
        seat.finishing();
        send({ type: 'encoding', id });
      },
      seat.turn,
    );
    send({ type: 'done', id, result });
  } catch (e) {
    send({ type: 'failed', id, error: toWire(e) });
  } finally {
    seat.leave();
    running.delete(id);
  }
}

port.on('message', (msg: ToCoreWorker) => {
  if (msg.type === 'run') void run(msg.id, msg);
  else if (msg.type === 'cancel') running.get(msg.id)?.abort(new Error('Cancelled'));
  else if (msg.type === 'release') {
    void Promise.all([...inferences.values()].map((i) => i.release().catch(() => undefined))).then(() => {
      inferences.clear();
      send({ type: 'released' });
    });
  }
});
