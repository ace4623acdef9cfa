/**
 * Operator endpoints, outside the contract: `GET /healthz` (the process answers), `GET /readyz` (it can
 * serve: the accounts store answers and the data directory is writable) and `GET /metrics`
 * (Prometheus text). None is rate limited, so a probe never competes with users for a slot.
 * /metrics is business data (volumes, credits), so it answers only with `--metrics-token` set and that
 * token as a Bearer credential; without the flag it does not exist.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TaskStats } from '../../tasks/taskStats.js';

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

export function renderMetrics(s: TaskStats): string {
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
  app.get('/metrics', NO_LIMIT, async (req, reply) => {
    const auth = req.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!sameSecret(given, token))
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({ error: 'metrics need the --metrics-token as a Bearer token' });
    return reply.type('text/plain; version=0.0.4').send(renderMetrics(await health.stats()));
  });
}
