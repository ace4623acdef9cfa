/**
 * The credit ledger on PostgreSQL (`--db`). The same guarantees as the JSON ledger, held by the
 * database instead of one process's mutex, so they hold across any number of server processes:
 * - reserve locks the user's row (`FOR UPDATE`), sums the open reservations and inserts the charge in
 *   one transaction: two concurrent start-tasks with credit for one cannot both pass;
 * - settle moves a charge reserved → settled under the charge row's lock and deducts in the same
 *   transaction: concurrent first polls on any process deduct once;
 * - release is one conditional UPDATE (reserved → released), idempotent.
 * Lock order is always charge row, then user row (reserve touches no existing charge row), so no cycle.
 * `reserveWith` inserts the task row in the reservation's own transaction (engine.ts: one fact, not two).
 */
import type { Caller } from '../api.js';
import { errors } from '../../contract/index.js';
import { inTransaction, type Pool, type PoolClient } from '../db/postgres.js';
import type { Ledger } from './ledger.js';
import type { Settlement } from './meter.js';
import { DEFAULT_PRICE_TABLE, priceOf, type PriceTable } from './priceTable.js';

interface ChargeRow {
  user_id: string;
  cost: number;
  state: 'reserved' | 'settled' | 'released';
  deducted: number;
}

const NOT_DEDUCTED: Settlement = { creditsDeducted: false, deductedCredits: 0 };

function settlementOf(c: ChargeRow | undefined, caller: Caller): Settlement | undefined {
  if (!c || c.user_id !== caller.userId) return NOT_DEDUCTED;
  if (c.state === 'settled') return { creditsDeducted: true, deductedCredits: c.deducted };
  if (c.state === 'released') return NOT_DEDUCTED;
  return undefined; // still reserved: the caller must settle it
}

/** The reservation inside a caller's transaction: user row locked, open reservations summed, charge inserted. */
async function reserveIn(db: PoolClient, caller: Caller, taskId: string, cost: number): Promise<void> {
  if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`invalid cost ${cost}`);
  const user = await db.query<{ balance: number }>(
    'SELECT credits + extra_credits AS balance FROM users WHERE user_id = $1 FOR UPDATE',
    [caller.userId],
  );
  const balance = user.rows[0]?.balance;
  if (balance === undefined) throw errors.insufficientCredits();
  const open = await db.query<{ reserved: number }>(
    `SELECT COALESCE(SUM(cost), 0) AS reserved FROM charges WHERE user_id = $1 AND state = 'reserved'`,
    [caller.userId],
  );
  if (Number(balance) - Number(open.rows[0]?.reserved ?? 0) < cost) throw errors.insufficientCredits();
  const inserted = await db.query(
    `INSERT INTO charges (task_id, user_id, cost, state, deducted, created_at) VALUES ($1, $2, $3, 'reserved', 0, $4) ON CONFLICT (task_id) DO NOTHING`,
    [taskId, caller.userId, cost, Date.now()],
  );
  if (inserted.rowCount !== 1) throw new Error(`task ${taskId} already has a charge`);
}

export function createPgLedger(pool: Pool, table: PriceTable = DEFAULT_PRICE_TABLE): Ledger {
  const available = async (userId: string): Promise<number | undefined> => {
    const { rows } = await pool.query<{ available: number }>(
      `SELECT u.credits + u.extra_credits - COALESCE((SELECT SUM(cost) FROM charges c WHERE c.user_id = u.user_id AND c.state = 'reserved'), 0) AS available
         FROM users u WHERE u.user_id = $1`,
      [userId],
    );
    return rows[0] ? Number(rows[0].available) : undefined;
  };

  return {
    quote(settings, imageCount) {
      return priceOf(table, settings, imageCount);
    },

    async assertCanUpload(caller) {
      const a = await available(caller.userId);
      if (a === undefined || a <= 0) throw errors.insufficientCredits();
    },

    async assertCanAfford(caller, cost) {
      const a = await available(caller.userId);
      if (a === undefined || a < Math.max(1, cost)) throw errors.insufficientCredits();
    },

    async adjust(caller, taskId, cost) {
      if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`invalid cost ${cost}`);
      await inTransaction(pool, async (db) => {
        // Same lock order as settle: the charge row, then the user row.
        const locked = await db.query<ChargeRow>(
          'SELECT user_id, cost, state, deducted FROM charges WHERE task_id = $1 FOR UPDATE',
          [taskId],
        );
        const charge = locked.rows[0];
        if (!charge || charge.user_id !== caller.userId || charge.state !== 'reserved')
          throw errors.insufficientCredits();
        if (cost > charge.cost) {
          const user = await db.query<{ balance: number }>(
            'SELECT credits + extra_credits AS balance FROM users WHERE user_id = $1 FOR UPDATE',
            [caller.userId],
          );
          const balance = user.rows[0]?.balance;
          if (balance === undefined) throw errors.insufficientCredits();
          const open = await db.query<{ reserved: number }>(
            `SELECT COALESCE(SUM(cost), 0) AS reserved FROM charges WHERE user_id = $1 AND state = 'reserved'`,
            [caller.userId],
          );
          if (Number(balance) - Number(open.rows[0]?.reserved ?? 0) < cost - charge.cost)
            throw errors.insufficientCredits();
        }
        await db.query('UPDATE charges SET cost = $2 WHERE task_id = $1', [taskId, cost]);
      });
    },

    async reserve(caller, taskId, cost) {
      await inTransaction(pool, (db) => reserveIn(db, caller, taskId, cost));
    },

    async reserveWith(caller, taskId, cost, alsoWrite) {
      await inTransaction(pool, async (db) => {
        await reserveIn(db, caller, taskId, cost);
        await alsoWrite(db);
      });
    },

    async settle(caller, taskId) {
      // Fast path for the common repeated poll: already settled or released, no transaction needed.
      const seen = await pool.query<ChargeRow>(
        'SELECT user_id, cost, state, deducted FROM charges WHERE task_id = $1',
        [taskId],
      );
      const known = settlementOf(seen.rows[0], caller);
      if (known) return known;
      return inTransaction(pool, async (db): Promise<Settlement> => {
        const locked = await db.query<ChargeRow>(
          'SELECT user_id, cost, state, deducted FROM charges WHERE task_id = $1 FOR UPDATE',
          [taskId],
        );
        const charge = locked.rows[0];
        const done = settlementOf(charge, caller);
        if (done || !charge) return done ?? NOT_DEDUCTED;
        const u = await db.query<{ credits: number; extra_credits: number }>(
          'SELECT credits, extra_credits FROM users WHERE user_id = $1 FOR UPDATE',
          [charge.user_id],
        );
        const user = u.rows[0];
        if (!user) return NOT_DEDUCTED;
        // Regular credits first, then extra; neither below zero.
        const fromRegular = Math.min(user.credits, charge.cost);
        const fromExtra = Math.min(user.extra_credits, charge.cost - fromRegular);
        await db.query(
          'UPDATE users SET credits = credits - $2, extra_credits = extra_credits - $3 WHERE user_id = $1',
          [charge.user_id, fromRegular, fromExtra],
        );
        await db.query(`UPDATE charges SET state = 'settled', deducted = $2, ended_at = $3 WHERE task_id = $1`, [
          taskId,
          fromRegular + fromExtra,
          Date.now(),
        ]);
        return { creditsDeducted: true, deductedCredits: fromRegular + fromExtra };
      });
    },

    async release(taskId) {
      await pool.query(
        `UPDATE charges SET state = 'released', ended_at = $2 WHERE task_id = $1 AND state = 'reserved'`,
        [taskId, Date.now()],
      );
    },

    async balance(caller) {
      const { rows } = await pool.query<{ credits: number; extra_credits: number }>(
        'SELECT credits, extra_credits FROM users WHERE user_id = $1',
        [caller.userId],
      );
      return { currentCredits: rows[0]?.credits ?? 0, currentExtraCredits: rows[0]?.extra_credits ?? 0 };
    },

    async reservedFor(userId) {
      const { rows } = await pool.query<{ reserved: number }>(
        `SELECT COALESCE(SUM(cost), 0) AS reserved FROM charges WHERE user_id = $1 AND state = 'reserved'`,
        [userId],
      );
      return Number(rows[0]?.reserved ?? 0);
    },
  };
}
