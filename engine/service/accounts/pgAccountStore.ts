/**
 * AccountStore on PostgreSQL (`--db`): the same behaviour as the JSON store, shared by every server
 * process and worker that points at the database.
 */
import type { Pool } from '../db/postgres.js';
import { apiKeyMatches, hashApiKey } from './apiKey.js';
import {
  AccountError,
  checkCreditAmount,
  normaliseEmail,
  plausibleApiKey,
  prepareNewUser,
  toAccount,
  type AccountStore,
} from './accountStore.js';
import type { UserRecord } from './state.js';

interface UserRow {
  user_id: string;
  email: string;
  key_hash: string;
  credits: number;
  extra_credits: number;
  created_at: number;
}

const COLUMNS = 'user_id, email, key_hash, credits, extra_credits, created_at';

function fromRow(r: UserRow): UserRecord {
  return {
    userId: r.user_id,
    email: r.email,
    keyHash: r.key_hash,
    credits: r.credits,
    extraCredits: r.extra_credits,
    createdAt: r.created_at,
  };
}

/** PostgreSQL's unique_violation: the e-mail (or, astronomically unlikely, the key digest) exists. */
const UNIQUE_VIOLATION = '23505';

export function createPgAccountStore(pool: Pool): AccountStore {
  return {
    async addUser(input) {
      const { record, apiKey } = prepareNewUser(input);
      try {
        await pool.query(`INSERT INTO users (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)`, [
          record.userId,
          record.email,
          record.keyHash,
          record.credits,
          record.extraCredits,
          record.createdAt,
        ]);
      } catch (e) {
        if ((e as { code?: string }).code === UNIQUE_VIOLATION)
          throw new AccountError(`a user with e-mail ${record.email} already exists`);
        throw e;
      }
      return { account: toAccount(record), apiKey };
    },
    async listUsers() {
      const { rows } = await pool.query<UserRow>(`SELECT ${COLUMNS} FROM users ORDER BY created_at, user_id`);
      return rows.map((r) => toAccount(fromRow(r)));
    },
    async addCredits(email, amount) {
      const e = normaliseEmail(email);
      const { credits, extraCredits } = checkCreditAmount(amount);
      const { rows } = await pool.query<UserRow>(
        `UPDATE users SET credits = credits + $2, extra_credits = extra_credits + $3 WHERE email = $1 RETURNING ${COLUMNS}`,
        [e, credits, extraCredits],
      );
      const row = rows[0];
      if (!row) throw new AccountError(`no user with e-mail ${e}`);
      return toAccount(fromRow(row));
    },
    async authenticate(apiKey) {
      if (!plausibleApiKey(apiKey)) return undefined;
      const { rows } = await pool.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE key_hash = $1`, [
        hashApiKey(apiKey),
      ]);
      const row = rows[0];
      // Looked up by digest (no timing signal about the key); confirmed in constant time like the JSON store.
      return row && apiKeyMatches(apiKey, row.key_hash) ? toAccount(fromRow(row)) : undefined;
    },
    async getUser(userId) {
      const { rows } = await pool.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE user_id = $1`, [userId]);
      return rows[0] ? toAccount(fromRow(rows[0])) : undefined;
    },
  };
}
