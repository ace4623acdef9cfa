/**
 * Picks where users and the credit ledger live: the JSON state file under the data directory (the
 * default, nothing to install) or PostgreSQL (`--db postgres://…`, shared by several processes).
 * `crisp serve` and `crisp users` both open accounts through here, so they always agree.
 */
import { createLedger, type Ledger } from '../credits/ledger.js';
import { compactLedger, ledgerArchiveFile } from '../credits/ledgerCompaction.js';
import { createPgLedger } from '../credits/pgLedger.js';
import type { PriceTable } from '../credits/priceTable.js';
import { openPostgres, type Pool } from '../db/postgres.js';
import { pgRateLimitStore, type SharedRateStore } from '../db/pgRateLimitStore.js';
import { createJsonAccountStore, openAccountsState, type AccountStore } from './accountStore.js';
import { createPgAccountStore } from './pgAccountStore.js';

export interface AccountsBackend {
  kind: 'json' | 'postgres';
  /** The PostgreSQL pool (postgres kind): the task queue shares it. */
  pool?: Pool;
  accounts: AccountStore;
  ledger: Ledger;
  /** Rate-limit counters shared with the other processes on this store; absent: per process. */
  rateLimitStore?: (windowMs: number) => SharedRateStore;
  /** Throws when the store cannot be used right now (readiness probe). */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** JSON store: moves charges ended more than `retentionMs` ago to the ledger archive (engine/service/credits/ledgerCompaction.ts). */
  compact?: (retentionMs: number) => Promise<unknown>;
}

export interface AccountsLocation {
  /** Data directory of the JSON store (ignored with `db`). */
  dataDir: string;
  /** postgres:// URL; absent: the JSON store. */
  db?: string | undefined;
  priceTable?: PriceTable;
}

export async function openAccounts(where: AccountsLocation): Promise<AccountsBackend> {
  if (where.db) {
    const pool = await openPostgres(where.db);
    return {
      kind: 'postgres',
      pool,
      accounts: createPgAccountStore(pool),
      ledger: createPgLedger(pool, where.priceTable),
      rateLimitStore: (windowMs) => pgRateLimitStore(pool, windowMs),
      ping: async () => {
        await pool.query('SELECT 1');
      },
      close: () => pool.end(),
    };
  }
  const state = await openAccountsState(where.dataDir);
  return {
    kind: 'json',
    accounts: createJsonAccountStore(state),
    ledger: createLedger(state, where.priceTable),
    ping: () => state.refresh(),
    close: async () => {},
    compact: (retentionMs) => compactLedger(state, ledgerArchiveFile(where.dataDir), { retentionMs }),
  };
}
