/**
 * Operator endpoints, outside the contract: `GET /healthz` (the process answers), `GET /readyz` (it can
 * serve: the accounts store answers and the data directory is writable) and `GET /metrics`
 * (Prometheus text). None is rate limited, so a probe never competes with users for a slot.
 * /metrics is business data (volumes, credits), so it answers only with `--metrics-token` set and that
 * token as a Bearer credential; without the flag it does not exist.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { TaskStats } from '../../service/tasks/taskStats.js';

export interface ServerHealth {
  /** undefined when ready, else why not (logged, and sent as the 503 body). */
  notReadyReason(): Promise<string | undefined>;
  stats(): Promise<TaskStats>;
  metricsToken?: string | undefined;
}

const NO_LIMIT = { config: { rateLimit: false } } as const;

function sameSecret(given: string, expected: string): boolean {
  // Compare digests so the comparison is constant-time whatever the lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Event-loop delay since the previous scrape, in seconds (what a request waited for the loop at worst). */
export interface LoopDelay {
  maxSeconds: number;
  p99Seconds: number;
  meanSeconds: number;
  /**
   * Linux: the worst delay of the loop not counting time this thread spent waiting for a CPU the machine
   * gave to other work (its run-queue wait, /proc/thread-self/schedstat) — the part of the delay this
   * process's own code caused. Absent where schedstat cannot be read.
   */
  ownMaxSeconds?: number;
}

const SCHEDSTAT = '/proc/thread-self/schedstat';

/** Nanoseconds this thread has waited on a run queue so far, or undefined where the kernel does not say. */
function runQueueWaitNs(): number | undefined {
  try {
    const wait = Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[1]);
    return Number.isFinite(wait) ? wait : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Samples this process's event-loop delay (perf_hooks) and answers the figures since the previous read, then
 * starts over, as Prometheus clients do: each scrape shows its own interval's worst case, which is what an
 * operator (and the test that no image stalls the API) needs. On Linux a 10 ms ticker also measures each
 * turn's lateness net of run-queue wait (ownMaxSeconds), which a loaded machine cannot inflate.
 */
export function loopDelayMonitor(): { read(): LoopDelay; stop(): void } {
  const h: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const TICK_MS = 10;
  let ownMaxNs: number | undefined = runQueueWaitNs() === undefined ? undefined : 0;
  let last = process.hrtime.bigint();
  let lastWait = runQueueWaitNs() ?? 0;
  const ticker =
    ownMaxNs === undefined
      ? undefined
      : setInterval(() => {
          const now = process.hrtime.bigint();
          const wait = runQueueWaitNs() ?? lastWait;
          const late = Number(now - last) - TICK_MS * 1e6 - (wait - lastWait);
          ownMaxNs = Math.max(ownMaxNs ?? 0, late);
          last = now;
          lastWait = wait;
        }, TICK_MS);
  ticker?.unref();
  return {
    read() {
      const n = h.count > 0;
      const r: LoopDelay = {
        maxSeconds: n ? h.max / 1e9 : 0,
        p99Seconds: n ? h.percentile(99) / 1e9 : 0,
        meanSeconds: n ? h.mean / 1e9 : 0,
        ...(ownMaxNs !== undefined ? { ownMaxSeconds: Math.max(0, ownMaxNs) / 1e9 } : {}),
      };
      h.reset();
      if (ownMaxNs !== undefined) ownMaxNs = 0;
      return r;
    },
    stop: () => {
      h.disable();
      clearInterval(ticker);
    },
  };
}

export function renderMetrics(s: TaskStats, loop?: LoopDelay): string {
  const lines = [
    '# HELP crisp_tasks Tasks known to this server (with --db: to every process on the database), by status.',
    '# TYPE crisp_tasks gauge',
    ...Object.entries(s.byStatus).map(([status, n]) => `crisp_tasks{status="${status}"} ${n}`),
    '# HELP crisp_queue_depth Tasks accepted and not finished yet (waiting or running).',
    '# TYPE crisp_queue_depth gauge',
    `crisp_queue_depth ${s.unfinished}`,
    '# HELP crisp_task_duration_seconds Start-task to PROCESSED, for finished tasks.',
    '# TYPE crisp_task_duration_seconds summary',
    `crisp_task_duration_seconds_sum ${s.processedSeconds.sum.toFixed(3)}`,
    `crisp_task_duration_seconds_count ${s.processedSeconds.count}`,
    '# HELP crisp_credits_charged_total Credits deducted for delivered tasks.',
    '# TYPE crisp_credits_charged_total counter',
    `crisp_credits_charged_total ${s.creditsCharged}`,
    ...(loop
      ? [
          '# HELP crisp_event_loop_delay_seconds Event-loop delay of this process since the previous scrape (images run off the loop, in engine/core).',
          '# TYPE crisp_event_loop_delay_seconds summary',
          `crisp_event_loop_delay_seconds{quantile="0.99"} ${loop.p99Seconds.toFixed(6)}`,
          `crisp_event_loop_delay_seconds_max ${loop.maxSeconds.toFixed(6)}`,
          `crisp_event_loop_delay_seconds_mean ${loop.meanSeconds.toFixed(6)}`,
          ...(loop.ownMaxSeconds !== undefined
            ? [
                '# HELP crisp_event_loop_own_delay_seconds_max The same worst delay less the time this thread waited for a CPU held by other work (Linux).',
                '# TYPE crisp_event_loop_own_delay_seconds_max gauge',
                `crisp_event_loop_own_delay_seconds_max ${loop.ownMaxSeconds.toFixed(6)}`,
              ]
            : []),
        ]
      : []),
  ];
  return `${lines.join('\n')}\n`;
}

export function registerHealthRoutes(app: FastifyInstance, health: ServerHealth): void {
  app.get('/healthz', NO_LIMIT, async (_req, reply) => reply.send({ status: 'ok' }));

  app.get('/readyz', NO_LIMIT, async (req, reply) => {
    const reason = await health.notReadyReason().catch((e: Error) => e.message);
    if (reason === undefined) return reply.send({ status: 'ready' });
    req.log.warn({ reason }, 'not ready');
    return reply.code(503).send({ status: 'not ready', reason });
  });

  const token = health.metricsToken;
  if (!token) return;
  const loop = loopDelayMonitor();
  app.addHook('onClose', async () => loop.stop());
  app.get('/metrics', NO_LIMIT, async (req, reply) => {
    const auth = req.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!sameSecret(given, token))
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({ error: 'metrics need the --metrics-token as a Bearer token' });
    return reply.type('text/plain; version=0.0.4').send(renderMetrics(await health.stats(), loop.read()));
  });
}
