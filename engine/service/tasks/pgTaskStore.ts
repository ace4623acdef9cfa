/**
 * Task records in PostgreSQL (`--db`): each row is the task and its job. Files (inputs, outputs) stay
 * under the shared storage directory (`--storage`), at the same paths as the JSON store uses, so any
 * process that mounts it can read what any worker wrote.
 *
 * Writes are fenced: while a worker of this process holds a task's lease, saves only land if the row is
 * still locked by that worker (a worker that lost its lease must not overwrite the new owner's state);
 * other saves (the API's insert at start-task, the settle after PROCESSED) only touch unlocked rows.
 */
import { rm } from 'node:fs/promises';
import type { Pool, PoolClient } from '../db/postgres.js';
import { TaskStore } from './taskStore.js';
import type { StoredTask } from './taskTypes.js';
import type { TaskStats } from './taskStats.js';
import type { TaskUsage } from '../quotas/userQuota.js';
import { TASK_STATUSES, type TaskStatus } from '../../contract/index.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** A catalog `lease-lost` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class LeaseLostError extends CrispError {
  override readonly name = 'LeaseLostError';
  constructor(message: string) {
    super('lease-lost', message);
  }
}

const TERMINAL = ['PROCESSED', 'PROCESSING_FAILED'];

export class PgTaskStore extends TaskStore {
  /** Task id → worker id of this process that holds its lease. */
  readonly held = new Map<string, string>();
  /** Tasks this process held and lost (lease expired, another worker claimed them): never written again from here. */
  readonly lost = new Set<string>();

  constructor(
    dataDir: string,
    private readonly pool: Pool,
    /** Finished records are served from memory until this long after they ended (then the sweep may remove them). */
    private readonly fileTtlMs: number,
    private readonly now: () => number,
  ) {
    super(dataDir);
  }

  /** Nothing to resume locally: unfinished tasks are jobs, claimed again by a worker once their lease expires. */
  override async load(): Promise<StoredTask[]> {
    return [];
  }

  override async fetch(id: string): Promise<StoredTask | undefined> {
    // A failed task, or a delivered one whose charge is settled, never changes again: polls of it (the
    // bulk of a busy server's requests) need no query until its files expire.
    const settled = this.tasks.get(id);
    if (
      settled &&
      (settled.status === 'PROCESSING_FAILED' || (settled.status === 'PROCESSED' && settled.creditsDeducted)) &&
      this.now() < settled.updatedAt + this.fileTtlMs
    ) {
      return settled;
    }
    const { rows } = await this.pool.query<{ record: StoredTask }>('SELECT record FROM tasks WHERE task_id = $1', [id]);
    const task = rows[0]?.record;
    if (!task) return undefined;
    // Keep the object identity while nothing changed, so status views cached by identity stay valid.
    const known = this.tasks.get(id);
    if (
      known &&
      known.updatedAt === task.updatedAt &&
      known.status === task.status &&
      known.progress === task.progress &&
      known.creditsDeducted === task.creditsDeducted
    ) {
      return known;
    }
    this.tasks.set(id, task);
    return task;
  }

  override async save(task: StoredTask): Promise<void> {
    if (this.lost.has(task.id)) throw new LeaseLostError(`task ${task.id}: this worker no longer holds it`);
    this.tasks.set(task.id, task);
    const owner = this.held.get(task.id);
    if (owner !== undefined) {
      const r = await this.pool.query(
        `UPDATE tasks SET record = $3, status = $4, updated_at = $5,
           locked_by = CASE WHEN $4 = ANY($6::text[]) THEN NULL ELSE locked_by END,
           locked_until = CASE WHEN $4 = ANY($6::text[]) THEN NULL ELSE locked_until END
         WHERE task_id = $1 AND locked_by = $2`,
        [task.id, owner, JSON.stringify(task), task.status, task.updatedAt, TERMINAL],
      );
      if (r.rowCount === 0) {
        this.lost.add(task.id);
        throw new LeaseLostError(`task ${task.id}: this worker no longer holds it`);
      }
      return;
    }
    await this.pool.query(
      `INSERT INTO tasks (task_id, user_id, status, record, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (task_id) DO UPDATE SET record = EXCLUDED.record, status = EXCLUDED.status, updated_at = EXCLUDED.updated_at
       WHERE tasks.locked_by IS NULL`,
      [task.id, task.userId, task.status, JSON.stringify(task), task.createdAt, task.updatedAt],
    );
  }

  /** start-task's insert of a new task inside the transaction that reserves its credits (engine.ts). */
  async insertNew(db: PoolClient, task: StoredTask): Promise<void> {
    await db.query(
      `INSERT INTO tasks (task_id, user_id, status, record, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [task.id, task.userId, task.status, JSON.stringify(task), task.createdAt, task.updatedAt],
    );
    this.tasks.set(task.id, task);
  }

  override async remove(id: string): Promise<void> {
    this.tasks.delete(id);
    await this.pool.query('DELETE FROM tasks WHERE task_id = $1', [id]);
    await rm(this.taskDir(id), { recursive: true, force: true });
  }

  /**
   * Throws LeaseLostError unless a worker of this process still holds the task's unexpired lease, asked of the
   * database. Checked before each image and before outputs are published, so a worker that was frozen past its
   * lease (and whose task another worker took over) stops before it writes anything.
   */
  async confirmHeld(id: string): Promise<void> {
    const owner = this.held.get(id);
    const lost = () => {
      this.lost.add(id);
      return new LeaseLostError(`task ${id}: this worker no longer holds it`);
    };
    if (owner === undefined || this.lost.has(id)) throw lost();
    const { rowCount } = await this.pool.query(
      'SELECT 1 FROM tasks WHERE task_id = $1 AND locked_by = $2 AND locked_until > now()',
      [id, owner],
    );
    if (!rowCount) throw lost();
  }

  /** Tasks of a user waiting or running on any worker (the per-user cap counts these). */
  async activeCount(userId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tasks WHERE user_id = $1 AND status IN ('PROCESSING', 'ENHANCING')`,
      [userId],
    );
    return rows[0]?.n ?? 0;
  }

  /** `taskUsageIn` (quotas/userQuota.ts) over every task of the user in the database, any process. */
  async usageOf(userId: string, now: number): Promise<TaskUsage> {
    const { rows } = await this.pool.query<TaskUsage>(
      `SELECT
         coalesce(sum(CASE WHEN status = 'PROCESSED'
           THEN (SELECT count(*) FROM jsonb_array_elements(record->'outputs') o WHERE (o->>'expiresAt')::bigint >= $2)
           ELSE jsonb_array_length(record->'inputs') END), 0)::int AS outputs,
         coalesce(sum(CASE WHEN status = 'PROCESSED'
           THEN (SELECT coalesce(sum((o->>'fileSize')::bigint), 0) FROM jsonb_array_elements(record->'outputs') o WHERE (o->>'expiresAt')::bigint >= $2)
           ELSE 0 END), 0)::float8 AS bytes
       FROM tasks WHERE user_id = $1 AND status <> 'PROCESSING_FAILED'`,
      [userId, now],
    );
    return rows[0] ?? { outputs: 0, bytes: 0 };
  }

  /** The operator figures of taskStats.ts, over every task in the database (any process, any worker). */
  async stats(): Promise<TaskStats> {
    const { rows } = await this.pool.query<{
      status: TaskStatus;
      n: number;
      secs: number;
      charged: number;
      done: number;
    }>(
      `SELECT status, count(*)::int AS n,
         coalesce(sum(CASE WHEN status = 'PROCESSED' THEN greatest(0, updated_at - created_at) ELSE 0 END), 0)::float8 / 1000 AS secs,
         coalesce(sum(CASE WHEN (record->>'creditsDeducted')::boolean THEN (record->>'deductedCredits')::bigint ELSE 0 END), 0)::float8 AS charged,
         count(*) FILTER (WHERE status = 'PROCESSED')::int AS done
       FROM tasks GROUP BY status`,
    );
    const byStatus = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
    const processedSeconds = { count: 0, sum: 0 };
    let creditsCharged = 0;
    for (const r of rows) {
      if (r.status in byStatus) byStatus[r.status] = r.n;
      processedSeconds.count += r.done;
      processedSeconds.sum += r.secs;
      creditsCharged += r.charged;
    }
    return { byStatus, unfinished: byStatus.PROCESSING + byStatus.ENHANCING, processedSeconds, creditsCharged };
  }

  /** Finished tasks whose files have expired, from every process (the sweep removes them). */
  async expiredTerminal(now: number, fileTtlMs: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ task_id: string }>(
      `SELECT task_id FROM tasks WHERE status = ANY($1::text[]) AND updated_at < $2 LIMIT 1000`,
      [TERMINAL, now - fileTtlMs],
    );
    return rows.map((r) => r.task_id);
  }
}
