/**
 * Workers for tasks queued in PostgreSQL (`crisp worker`, or `crisp serve --db … --workers N`).
 *
 * A small `SELECT … FOR UPDATE SKIP LOCKED` queue on the tasks table (migration 3) rather than pg-boss or
 * graphile-worker: the task row already is the durable job (status, inputs, progress), so a second job table
 * would have to be kept in step with it in every transaction; the queue needs only claim, lease, attempts
 * and a dead-letter state, which are four statements here (docs/deploy.md says more).
 *
 * - claim: the oldest runnable row whose lease is free or expired, locked_by = this worker, attempts + 1;
 * - lease: every heartbeat (each second, or a third of the lease if shorter) pushes locked_until forward and
 *   writes the task's progress (so polls on any API process see it: one write per running task per second);
 * - a worker killed mid-task stops heartbeating: after at most `leaseMs` another worker claims the row and
 *   runs the task from its stored inputs; its credit reservation stands, so it is charged once, on delivery;
 * - dead letter: a task claimed more than `maxAttempts` times ends PROCESSING_FAILED and its credits are freed.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from '../db/postgres.js';
import type { PgTaskStore } from './pgTaskStore.js';
import type { TaskRunner } from './taskRunner.js';
import type { StoredTask } from './taskTypes.js';

export interface QueueOptions {
  pool: Pool;
  /** Tasks this process runs at once (they share its one device image by image); 0: none (API only). */
  workers: number;
  /** A task whose worker stops heartbeating is claimable again after this long (default 30 s). */
  leaseMs?: number;
  /** How often an idle worker looks for a job (default 250 ms). */
  pollMs?: number;
  /** Claims per task before it is given up (default 4: the first run and 3 more). */
  maxAttempts?: number;
  /** Identifies this process in locked_by (default host:pid:random). */
  workerId?: string;
}

export const DEFAULT_LEASE_MS = 30_000;

interface Deps {
  store: PgTaskStore;
  runner: TaskRunner;
  now: () => number;
  release: (taskId: string) => Promise<void>;
  gaveUpMessage: string;
}

export class QueueWorker {
  readonly id: string;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private closing = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly opts: QueueOptions,
    private readonly deps: Deps,
  ) {
    this.id = opts.workerId ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.pollMs = opts.pollMs ?? 250;
    this.maxAttempts = opts.maxAttempts ?? 4;
  }

  /** Whether this process may still end the task (the runner's `owns`). */
  owns(task: StoredTask): boolean {
    return !this.closing && this.deps.store.held.has(task.id) && !this.deps.store.lost.has(task.id);
  }

  start(): void {
    if (this.opts.workers <= 0 || this.loop) return;
    this.loop = this.run();
  }

  /** A task was just queued by this process: look now rather than at the next poll. */
  poke(): void {
    this.wake?.();
  }

  /** Called by the runner when a task leaves it. */
  ended(task: StoredTask): void {
    const t = this.timers.get(task.id);
    if (t) clearInterval(t);
    this.timers.delete(task.id);
    this.deps.store.held.delete(task.id);
    this.deps.store.lost.delete(task.id);
    this.wake?.();
  }

  /** Stops claiming; running tasks are handed back (their rows unlocked) for another worker to run. */
  async close(): Promise<void> {
    this.closing = true;
    this.wake?.();
    await this.loop;
    await this.deps.runner.close();
    for (const t of this.timers.values()) clearInterval(t);
    this.timers.clear();
    await this.opts.pool
      .query(`UPDATE tasks SET locked_by = NULL, locked_until = NULL WHERE locked_by = $1`, [this.id])
      .catch(() => undefined);
  }

  private async run(): Promise<void> {
    while (!this.closing) {
      let claimed = false;
      if (this.deps.store.held.size < this.opts.workers) {
        try {
          claimed = await this.claimOne();
        } catch {
          // Database unreachable: try again after the poll interval rather than crash the process.
        }
      }
      if (claimed) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.pollMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  private async claimOne(): Promise<boolean> {
    const { rows } = await this.opts.pool.query<{ record: StoredTask; attempts: number }>(
      `UPDATE tasks SET locked_by = $1, locked_until = now() + make_interval(secs => $2::double precision / 1000), attempts = attempts + 1
       WHERE task_id = (
         SELECT task_id FROM tasks
         WHERE status IN ('PROCESSING', 'ENHANCING') AND (locked_by IS NULL OR locked_until < now())
         ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING record, attempts`,
      [this.id, this.leaseMs],
    );
    const row = rows[0];
    if (!row) return false;
    const task = row.record;
    const { store } = this.deps;
    store.held.set(task.id, this.id);
    store.lost.delete(task.id);
    // An earlier attempt may have left outputs (or a temp file mid-write): the task runs whole again.
    task.outputs = [];
    await rm(path.join(store.taskDir(task.id), 'outputs'), { recursive: true, force: true });
    task.updatedAt = this.deps.now();
    if (row.attempts > this.maxAttempts) {
      await this.deps.release(task.id);
      task.status = 'PROCESSING_FAILED';
      task.error = this.deps.gaveUpMessage;
      await store.save(task).catch(() => undefined);
      store.held.delete(task.id);
      return true;
    }
    task.status = 'PROCESSING';
    task.resumes = row.attempts - 1;
    await store.save(task);
    this.timers.set(
      task.id,
      // At most once a second (progress for polls), and at least three times a lease (so one slow write never loses it).
      setInterval(() => void this.heartbeat(task), Math.max(50, Math.min(1000, Math.floor(this.leaseMs / 3)))),
    );
    this.deps.runner.enqueue(task);
    return true;
  }

  private async heartbeat(task: StoredTask): Promise<void> {
    if (!this.deps.store.held.has(task.id) || this.deps.store.lost.has(task.id)) return;
    try {
      const r = await this.opts.pool.query(
        // The progress guard keeps a snapshot taken before a concurrent save from rolling the record back.
        `UPDATE tasks SET locked_until = now() + make_interval(secs => $3::double precision / 1000),
           record = CASE WHEN (record->>'progress')::int <= $5 AND (record->>'updatedAt')::bigint <= $6 THEN $4::jsonb ELSE record END
         WHERE task_id = $1 AND locked_by = $2 AND status IN ('PROCESSING', 'ENHANCING')`,
        [task.id, this.id, this.leaseMs, JSON.stringify(task), task.progress, task.updatedAt],
      );
      if (r.rowCount === 0 && this.deps.store.held.has(task.id) && (await this.takenOver(task.id))) {
        // Another worker took it over (this process stalled past its lease): stop it here without side effects.
        this.deps.store.lost.add(task.id);
        await this.deps.runner.cancel(task, 'lease lost');
      }
    } catch {
      // A missed heartbeat is fine while the lease lasts; the next one tries again.
    }
  }

  /** True when another worker holds the task now (not when it simply finished here meanwhile). */
  private async takenOver(taskId: string): Promise<boolean> {
    const { rows } = await this.opts.pool.query<{ locked_by: string | null; status: string }>(
      'SELECT locked_by, status FROM tasks WHERE task_id = $1',
      [taskId],
    );
    const row = rows[0];
    return (
      row !== undefined && (row.status === 'PROCESSING' || row.status === 'ENHANCING') && row.locked_by !== this.id
    );
  }
}
