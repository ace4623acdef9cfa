/**
 * A PostgreSQL connection pool with the schema brought up to date. `crisp serve --db URL` and
 * `crisp users --db URL` open one; the accounts store and the credit ledger share it.
 */
import pg from 'pg';
import { MIGRATIONS, type Migration } from './migrations.js';
import { CrispError } from '../../contract/errorCatalog.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** Any 64-bit constant works; it only has to be the same in every Crisp process. */
const MIGRATION_LOCK = 0x637269737001n;

/** A catalog `storage-failed` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class DatabaseError extends CrispError {
  override readonly name = 'DatabaseError';
  constructor(message: string) {
    super('storage-failed', message);
  }
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** The URL without its password, for messages and logs. */
export function redactDbUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

export async function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    await client.query(`CREATE TABLE IF NOT EXISTS crisp_migrations (
      version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM crisp_migrations')).rows.map((r) => r.version),
    );
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO crisp_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
        applied.push(m.version);
      } catch (e) {
        await client.query('ROLLBACK');
        throw new DatabaseError(`database migration ${m.version} (${m.name}) failed: ${(e as Error).message}`);
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => undefined);
    client.release();
  }
  return applied;
}

/** Opens a pool and migrates; a database that cannot be reached fails here with a clear message. */
export async function openPostgres(url: string, options: { max?: number } = {}): Promise<Pool> {
  if (!isPostgresUrl(url)) throw new DatabaseError(`--db must be a postgres:// URL (got '${redactDbUrl(url)}')`);
  // bigint columns come back as strings by default; balances fit in a double, so read them as numbers.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10, connectionTimeoutMillis: 10_000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  try {
    await migrate(pool);
  } catch (e) {
    await pool.end().catch(() => undefined);
    if (e instanceof DatabaseError) throw e;
    throw new DatabaseError(`cannot use the database at ${redactDbUrl(url)}: ${(e as Error).message}`);
  }
  return pool;
}

/** Runs fn in one transaction on one client: COMMIT on return, ROLLBACK on throw. */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
