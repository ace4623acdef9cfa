/**
 * The link-signing secret kept in PostgreSQL, for processes that share no directory (`--storage s3://…`).
 * The first process to start inserts a random one; every process, that one included, then reads the row
 * that won, so all of them sign and verify with the same key.
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from './postgres.js';

export async function loadOrCreateSharedSecret(pool: Pool, name = 'url-signing'): Promise<Buffer> {
  await pool.query('INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(32).toString('hex'),
  ]);
  const { rows } = await pool.query<{ value: string }>('SELECT value FROM secrets WHERE name = $1', [name]);
  const hex = rows[0]?.value ?? '';
  if (!/^[0-9a-f]{64}$/.test(hex))
    throw new Error(`the secret "${name}" in the database is not 64 hex digits: delete its row to create a new one`);
  return Buffer.from(hex, 'hex');
}
