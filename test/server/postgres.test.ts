/**
 * Users and the credit ledger on PostgreSQL (`--db`): the same guarantees as the JSON store, held
 * across processes. Two pools stand for two server processes; the last test runs the real CLI and a
 * real server against the database.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { createPgLedger } from '../../engine/service/credits/pgLedger.js';
import { migrate, openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import type { Ledger } from '../../engine/service/credits/ledger.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { runCli } from '../helpers/runCli.js';
import { BASIC, pollStatus, postForm, postJson, SET5, startTestServer, taskForm, type HttpAnswer } from './helpers.js';

let server: TempPostgres;
const pools: Pool[] = [];
let dbCount = 0;

beforeAll(async () => {
  server = await startTempPostgres();
}, 60_000);

afterAll(async () => {
  for (const p of pools.splice(0)) await p.end();
  await server?.stop();
});

/** A fresh database and `n` pools on it (n "processes"). */
async function freshDb(n = 1): Promise<{ url: string; pools: Pool[] }> {
  const url = await createDatabase(server.url, `crisp_test_${++dbCount}`);
  const opened = await Promise.all(Array.from({ length: n }, () => openPostgres(url, { max: 20 })));
  pools.push(...opened);
  return { url, pools: opened };
}

const callerOf = (a: { userId: string; email: string }) => ({ userId: a.userId, email: a.email });

describe('PostgreSQL store', () => {
  it('applies each migration once, even when several processes start together', async () => {
    const url = await createDatabase(server.url, 'crisp_migrate');
    const raw = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: url }));
    pools.push(...raw);
    const applied = await Promise.all(raw.map((p) => migrate(p)));
    expect(applied.flat().sort()).toEqual([1, 2, 3, 4, 5]);
    const { rows } = await raw[0]!.query('SELECT version FROM crisp_migrations ORDER BY version');
    expect(rows).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }, { version: 5 }]);
    expect(await migrate(raw[1]!)).toEqual([]);
  });

  it('refuses a non-postgres URL and an unreachable server with a clear message and no password', async () => {
    await expect(openPostgres('mysql://x@y/z')).rejects.toThrow("--db must be a postgres:// URL (got 'mysql://x@y/z')");
    const err = await openPostgres('postgres://u:s3cret@127.0.0.1:1/db').catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^cannot use the database at postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db: /);
    expect((err as Error).message).not.toContain('s3cret');
  });

  it('stores only the key digest; authenticates; refuses duplicate e-mails; adds credits', async () => {
    const {
      pools: [pool],
    } = await freshDb();
    const accounts = createPgAccountStore(pool!);
    const { account, apiKey } = await accounts.addUser({ email: 'Ann@Example.com', credits: 3 });
    expect(account.email).toBe('ann@example.com');
    const dump = JSON.stringify((await pool!.query('SELECT * FROM users')).rows);
    expect(dump).not.toContain(apiKey);
    expect((await accounts.authenticate(apiKey))?.userId).toBe(account.userId);
    expect(await accounts.authenticate(`${apiKey}x`)).toBeUndefined();
    await expect(accounts.addUser({ email: 'ann@example.com' })).rejects.toThrow(
      'a user with e-mail ann@example.com already exists',
    );
    await expect(accounts.addCredits('nobody@example.com', { credits: 1 })).rejects.toThrow(
      'no user with e-mail nobody@example.com',
    );
    expect(await accounts.addCredits('ANN@example.com', { credits: 2, extraCredits: 1 })).toMatchObject({
      credits: 5,
      extraCredits: 1,
    });
    expect((await accounts.listUsers()).map((u) => u.email)).toEqual(['ann@example.com']);
  });

  it('two processes: of two concurrent reservations with credit for one, exactly one fails', async () => {
    const {
      pools: [a, b],
    } = await freshDb(2);
    const { account } = await createPgAccountStore(a!).addUser({ email: 'r@example.com', credits: 2 });
    const [la, lb] = [createPgLedger(a!), createPgLedger(b!)];
    const results = await Promise.allSettled([
      la.reserve(callerOf(account), 't1', 2),
      lb.reserve(callerOf(account), 't2', 2),
    ]);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.reason).toMatchObject({ status: 402, message: 'Insufficient credits' });
    expect(await lb.reservedFor(account.userId)).toBe(2);
    await expect(la.assertCanUpload(callerOf(account))).rejects.toMatchObject({ status: 402 });
  });

  it('64 concurrent first polls on two processes deduct once; regular before extra; release frees', async () => {
    const {
      pools: [a, b],
    } = await freshDb(2);
    const { account } = await createPgAccountStore(a!).addUser({ email: 's@example.com', credits: 3, extraCredits: 5 });
    const ledgers: Ledger[] = [createPgLedger(a!), createPgLedger(b!)];
    const caller = callerOf(account);
    await ledgers[0]!.reserve(caller, 'big', 4);
    await ledgers[1]!.reserve(caller, 'failed', 2);
    const settles = await Promise.all(Array.from({ length: 64 }, (_, i) => ledgers[i % 2]!.settle(caller, 'big')));
    expect(new Set(settles.map((s) => JSON.stringify(s)))).toEqual(
      new Set([JSON.stringify({ creditsDeducted: true, deductedCredits: 4 })]),
    );
    expect(await ledgers[1]!.balance(caller)).toEqual({ currentCredits: 0, currentExtraCredits: 4 });
    await Promise.all([ledgers[0]!.release('failed'), ledgers[1]!.release('failed')]);
    expect(await ledgers[0]!.settle(caller, 'failed')).toEqual({ creditsDeducted: false, deductedCredits: 0 });
    expect(await ledgers[0]!.reservedFor(account.userId)).toBe(0);
    expect(await ledgers[1]!.settle({ userId: 'usr_x', email: 'x@x' }, 'big')).toEqual({
      creditsDeducted: false,
      deductedCredits: 0,
    });
  });

  it('200 concurrent reservations from 20 users with credit for half: never below zero, charges equal balance drops', async () => {
    const {
      pools: [a, b],
    } = await freshDb(2);
    const accounts = createPgAccountStore(a!);
    const users = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        accounts.addUser({ email: `u${i}@example.com`, credits: 6, extraCredits: 4 }),
      ),
    );
    const ledgers = [createPgLedger(a!), createPgLedger(b!)];
    // Each user asks for 10 tasks of 2 credits with 10 credits: exactly 5 fit.
    const attempts = users.flatMap(({ account }, u) =>
      Array.from({ length: 10 }, (_, t) => ({
        caller: callerOf(account),
        taskId: `u${u}-t${t}`,
        ledger: ledgers[(u + t) % 2]!,
      })),
    );
    const results = await Promise.allSettled(attempts.map((x) => x.ledger.reserve(x.caller, x.taskId, 2)));
    const accepted = attempts.filter((_, i) => results[i]!.status === 'fulfilled');
    expect(accepted).toHaveLength(100);
    for (const { account } of users) expect(accepted.filter((x) => x.caller.userId === account.userId)).toHaveLength(5);
    const settlements = await Promise.all(
      accepted.flatMap((x) => [ledgers[0]!.settle(x.caller, x.taskId), ledgers[1]!.settle(x.caller, x.taskId)]),
    );
    expect(settlements.every((s) => s.creditsDeducted && s.deductedCredits === 2)).toBe(true);
    const { rows } = await a!.query<{ credits: number; extra_credits: number }>(
      'SELECT credits, extra_credits FROM users',
    );
    expect(rows.every((r) => r.credits === 0 && r.extra_credits === 0)).toBe(true);
    const charged = await a!.query<{ total: string }>(
      `SELECT SUM(deducted) AS total FROM charges WHERE state = 'settled'`,
    );
    expect(Number(charged.rows[0]!.total)).toBe(20 * 10);
  });
});

describe('crisp serve --db and crisp users --db', () => {
  it('two servers on one database share users and credits; a task is charged once', async () => {
    const { url } = await freshDb(0);
    const add = await runCli(['users', 'add', '--db', url, '--email', 'team@example.com', '--credits', '5']);
    expect(add.code).toBe(0);
    const key = add.stdout.trim().split('\n').pop()!;
    const one = await startTestServer({ db: url });
    const two = await startTestServer({ db: url });
    try {
      const bytes = await readFile(path.join(SET5, 'baby.png'));
      const started: HttpAnswer = await postForm(
        one.url,
        key,
        taskForm(BASIC, [{ name: 'file', fileName: 'baby.png', bytes: new Uint8Array(bytes) }]),
      );
      expect(started.status).toBe(200);
      const taskId = (started.json as { data: { taskId: string } }).data.taskId;
      const done = await pollStatus(one.url, key, taskId);
      expect(done).toMatchObject({ status: 'PROCESSED', creditsDeducted: true, deductedCredits: 1 });
      // The other process sees the same balance at once.
      const acct = await postJson(two.url, '/get-account', key, {});
      expect(acct.status).toBe(200);
      expect(acct.json).toMatchObject({ data: { currentCredits: 4 } });
      const list = await runCli(['users', 'list', '--db', url, '--json']);
      expect(JSON.parse(list.stdout)).toEqual([
        expect.objectContaining({ email: 'team@example.com', credits: 4, extraCredits: 0 }),
      ]);
      // accounts.json is not used with --db.
      await expect(readFile(path.join(one.dataDir, 'accounts.json'))).rejects.toMatchObject({ code: 'ENOENT' });
      expect((await request(`${one.url}/readyz`)).statusCode).toBe(200);
    } finally {
      await one.stop();
      await two.stop();
    }
  });

  it('the per-key rate limit holds across two servers on one database', async () => {
    const {
      url,
      pools: [pool],
    } = await freshDb(1);
    const { apiKey } = await createPgAccountStore(pool!).addUser({ email: 'rl@example.com', credits: 1 });
    const limits = { serverLimits: { rateLimitMax: 5, rateLimitWindowMs: 60_000 } };
    const one = await startTestServer({ db: url, ...limits });
    const two = await startTestServer({ db: url, ...limits });
    try {
      const windowOf = () => Math.floor(Date.now() / 60_000);
      let statuses: number[] = [];
      // Windows are aligned to the clock; in the rare run that straddles a boundary, go again.
      for (let attempt = 0; attempt < 2; attempt++) {
        await pool!.query('DELETE FROM rate_limits');
        const w = windowOf();
        statuses = [];
        for (let i = 0; i < 6; i++)
          statuses.push((await postJson(i % 2 === 0 ? one.url : two.url, '/get-account', apiKey, {})).status);
        if (windowOf() === w) break;
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      const { rows } = await pool!.query<{ hits: number }>('SELECT hits FROM rate_limits');
      expect(rows.map((r) => r.hits).reduce((a, b) => a + b, 0)).toBe(6);
    } finally {
      await one.stop();
      await two.stop();
    }
  });

  it('the per-key rate limit stays exact under 64 concurrent requests on two servers (coalesced upserts)', async () => {
    const {
      url,
      pools: [pool],
    } = await freshDb(1);
    const { apiKey } = await createPgAccountStore(pool!).addUser({ email: 'rlc@example.com', credits: 1 });
    const limits = { serverLimits: { rateLimitMax: 40, rateLimitWindowMs: 60_000 } };
    const one = await startTestServer({ db: url, ...limits });
    const two = await startTestServer({ db: url, ...limits });
    try {
      const windowOf = () => Math.floor(Date.now() / 60_000);
      let statuses: number[] = [];
      for (let attempt = 0; attempt < 2; attempt++) {
        await pool!.query('DELETE FROM rate_limits');
        const w = windowOf();
        statuses = await Promise.all(
          Array.from({ length: 64 }, (_, i) =>
            postJson(i % 2 === 0 ? one.url : two.url, '/get-account', apiKey, {}).then((r) => r.status),
          ),
        );
        if (windowOf() === w) break;
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(40);
      expect(statuses.filter((s) => s === 429)).toHaveLength(24);
      const { rows } = await pool!.query<{ hits: number }>('SELECT hits FROM rate_limits');
      expect(rows.map((r) => r.hits).reduce((a, b) => a + b, 0)).toBe(64);
    } finally {
      await one.stop();
      await two.stop();
    }
  });

  it('/readyz answers 503 with the reason when the database goes away', async () => {
    const { url } = await freshDb(0);
    const srv = await startTestServer({ db: url });
    try {
      const name = new URL(url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`);
      await admin.end();
      const r = await request(`${srv.url}/readyz`);
      expect(r.statusCode).toBe(503);
      const body = (await r.body.json()) as { status: string; reason: string };
      expect(body.status).toBe('not ready');
      expect(body.reason).toMatch(/^the accounts store is not reachable: /);
    } finally {
      await srv.stop();
    }
  });
});
