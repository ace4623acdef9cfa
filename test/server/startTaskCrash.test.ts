/**
 * Reservation and task are one fact, on both stores, across a kill -9 (issue 27). `crisp serve` runs as a
 * real process with the test-only crash point `start-task:reserved` (engine/service/tasks/crashPoint.ts), so it
 * kills itself exactly after start-task reserved the credits and before the task record exists — no race
 * with the clock. After a restart: nothing is reserved without a task, no task folder without a record,
 * and balance + reserved == granted − settled. With --db the kill's input folder is found by the sweep's listing. The sweep rule is checked too: a task never polled until
 * its files expire is removed and its reservation released (clock advanced, in-process server).
 */
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsFile } from '../../engine/service/accounts/accountStore.js';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import type { AccountsState } from '../../engine/service/accounts/state.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { DEFAULT_LIMITS } from '../../engine/service/limits.js';
import { CRASH_POINT_ENV } from '../../engine/service/tasks/crashPoint.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import {
  addUser,
  BASIC,
  dataOf,
  pollStatus,
  postForm,
  postJson,
  SET5,
  startTestServer,
  taskForm,
  tempDir,
} from './helpers.js';
import { addCliUser, startServe, type ServeProcess } from './serveProcess.js';

const GRANTED = 10;
const CRASH_ENV = { ...process.env, [CRASH_POINT_ENV]: 'start-task:reserved' };
let png: Buffer;
let pgServer: TempPostgres;
const processes: ServeProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  png = await sharp(path.join(SET5, 'bird.png')).resize(32, 32).png().toBuffer();
  pgServer = await startTempPostgres();
}, 60_000);
afterAll(async () => {
  for (const p of processes) await p.kill();
  await pgServer?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function serve(dataDir: string, flags: string[], env?: NodeJS.ProcessEnv): Promise<ServeProcess> {
  const s = await startServe(dataDir, flags, env);
  processes.push(s);
  return s;
}

const form = () => taskForm(BASIC, [{ name: 'file', fileName: 'bird.png', bytes: png }]);

/** start-task against a server that dies at the crash point: the request gets no answer, the process exits by SIGKILL. */
async function startTaskAndCrash(server: ServeProcess, key: string): Promise<void> {
  const answer = await postForm(server.url, key, form()).then(
    (a) => a,
    () => undefined,
  );
  expect(answer, 'the server answered although it should have died at the crash point').toBeUndefined();
  expect(await server.exited()).toMatchObject({ signal: 'SIGKILL' });
}

/** A normal task after the restart: it is charged its price once, from the balance the crash left intact. */
async function runOneTask(server: ServeProcess, key: string): Promise<number> {
  const started = await postForm(server.url, key, form());
  expect(started.status).toBe(200);
  const { taskId, creditsToDeduct } = dataOf<{ taskId: string; creditsToDeduct: number }>(started);
  const done = await pollStatus(server.url, key, taskId);
  expect(done).toMatchObject({ status: 'PROCESSED', creditsDeducted: true, deductedCredits: creditsToDeduct });
  return creditsToDeduct;
}

async function accountOf(server: ServeProcess, key: string): Promise<{ currentCredits: number }> {
  const a = await postJson(server.url, '/get-account', key, {});
  expect(a.status).toBe(200);
  return dataOf<{ currentCredits: number }>(a);
}

/**
 * The sweep of a server on the same folder and database finds the debris by listing the task folders: once
 * older than any start-task can take (its times set two hours back, as if it had lain there that long) it is
 * removed; a folder as young as a start-task in progress, and every folder with a record, are kept.
 */
async function sweepsDebris(dataDir: string, db: string, debris: string): Promise<void> {
  const old = new Date(Date.now() - 2 * 3_600_000);
  for (const p of ['inputs/0', 'inputs', '.'].map((rel) => path.join(dataDir, 'tasks', debris, rel)))
    await utimes(p, old, old);
  const young = path.join(dataDir, 'tasks', randomUUID());
  await mkdir(path.join(young, 'inputs'), { recursive: true });
  await writeFile(path.join(young, 'inputs', '0'), png);
  const s = await startTestServer({ dataDir, db });
  try {
    await s.engine.sweep();
    expect(existsSync(path.join(dataDir, 'tasks', debris))).toBe(false);
    expect(existsSync(path.join(young, 'inputs', '0'))).toBe(true);
  } finally {
    await s.close();
  }
  await rm(young, { recursive: true });
}

describe('a kill -9 between reserving credits and saving the task', () => {
  it('embedded store: the restart releases the orphan reservation and removes the folder without a record', async () => {
    const dataDir = await tempDir('crisp-crash-embedded-');
    dirs.push(dataDir);
    const key = await addCliUser(dataDir, 'crash@example.com', GRANTED);

    await startTaskAndCrash(await serve(dataDir, ['--threads', '1'], CRASH_ENV), key);
    // What the kill left: one reserved charge whose task has no record, only its input.
    const before = JSON.parse(await readFile(accountsFile(dataDir), 'utf8')) as AccountsState;
    const orphans = Object.entries(before.charges).filter(([, c]) => c.state === 'reserved');
    expect(orphans).toHaveLength(1);
    const orphanId = orphans[0]![0];
    expect(existsSync(path.join(dataDir, 'tasks', orphanId, 'inputs', '0'))).toBe(true);
    expect(existsSync(path.join(dataDir, 'tasks', orphanId, 'task.json'))).toBe(false);

    const server = await serve(dataDir, ['--threads', '1']);
    const after = JSON.parse(await readFile(accountsFile(dataDir), 'utf8')) as AccountsState;
    expect(after.charges[orphanId]?.state).toBe('released');
    expect(existsSync(path.join(dataDir, 'tasks', orphanId))).toBe(false);
    expect((await accountOf(server, key)).currentCredits).toBe(GRANTED);

    const cost = await runOneTask(server, key);
    const final = JSON.parse(await readFile(accountsFile(dataDir), 'utf8')) as AccountsState;
    const charges = Object.values(final.charges);
    const reserved = charges.filter((c) => c.state === 'reserved').reduce((a, c) => a + c.cost, 0);
    const settled = charges.filter((c) => c.state === 'settled').reduce((a, c) => a + c.deducted, 0);
    expect(settled).toBe(cost);
    expect((await accountOf(server, key)).currentCredits + reserved).toBe(GRANTED - settled);
    // Every task folder left has its record.
    for (const id of await readdir(path.join(dataDir, 'tasks')))
      expect(existsSync(path.join(dataDir, 'tasks', id, 'task.json'))).toBe(true);
  }, 180_000);

  it('PostgreSQL: reservation and task row are one transaction, so the kill leaves neither', async () => {
    const dbUrl = await createDatabase(pgServer.url, 'crisp_crash');
    const dataDir = await tempDir('crisp-crash-pg-');
    dirs.push(dataDir);
    const flags = ['--db', dbUrl, '--threads', '1'];
    // The first start applies the migrations; users are added once the schema exists.
    const first = await serve(dataDir, flags);
    const pool: Pool = await openPostgres(dbUrl, { max: 2 });
    try {
      const { account, apiKey: key } = await createPgAccountStore(pool).addUser({
        email: 'crash-pg@example.com',
        credits: GRANTED,
      });
      await first.kill();

      await startTaskAndCrash(await serve(dataDir, flags, CRASH_ENV), key);
      const charges = async () =>
        (
          await pool.query<{ state: string; cost: number; deducted: number; has_task: boolean }>(
            `SELECT c.state, c.cost, c.deducted, EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = c.task_id) AS has_task
               FROM charges c WHERE c.user_id = $1`,
            [account.userId],
          )
        ).rows;
      expect(await charges()).toEqual([]);
      expect((await pool.query('SELECT 1 FROM tasks')).rowCount).toBe(0);
      // ...but its input is on disk, in a task folder no record names.
      const [debris, ...more] = await readdir(path.join(dataDir, 'tasks'));
      expect(more).toEqual([]);
      expect(existsSync(path.join(dataDir, 'tasks', debris!, 'inputs', '0'))).toBe(true);
      await sweepsDebris(dataDir, dbUrl, debris!);

      const server = await serve(dataDir, flags);
      expect((await accountOf(server, key)).currentCredits).toBe(GRANTED);
      const cost = await runOneTask(server, key);
      const rows = await charges();
      expect(rows.filter((c) => c.state === 'reserved' && !c.has_task)).toEqual([]);
      const reserved = rows.filter((c) => c.state === 'reserved').reduce((a, c) => a + Number(c.cost), 0);
      const settled = rows.filter((c) => c.state === 'settled').reduce((a, c) => a + Number(c.deducted), 0);
      expect(settled).toBe(cost);
      expect((await accountOf(server, key)).currentCredits + reserved).toBe(GRANTED - settled);
    } finally {
      await pool.end();
    }
  }, 180_000);
});

describe('the sweep never leaves a removed task reserved', () => {
  for (const store of ['embedded', 'postgres'] as const) {
    it(`${store}: a PROCESSED task never polled is removed when its files expire and its reservation released`, async () => {
      let clock = Date.now();
      const db = store === 'postgres' ? await createDatabase(pgServer.url, 'crisp_sweep') : undefined;
      const s = await startTestServer({ now: () => clock, ...(db ? { db } : {}) });
      try {
        const user = await addUser(s, `sweep-${store}@example.com`, GRANTED);
        const started = await postForm(s.url, user.key, form());
        expect(started.status).toBe(200);
        const { taskId, creditsToDeduct } = dataOf<{ taskId: string; creditsToDeduct: number }>(started);
        expect(creditsToDeduct).toBeGreaterThan(0);
        // Wait for the work without polling the status (a poll would settle the charge).
        await s.engine.idle();
        for (let i = 0; i < 600 && (await s.engine.stats()).byStatus.PROCESSED < 1; i++)
          await new Promise((r) => setTimeout(r, 100));
        expect((await s.engine.stats()).byStatus.PROCESSED).toBe(1);
        expect(await s.ledger.reservedFor(user.userId)).toBe(creditsToDeduct);

        clock += DEFAULT_LIMITS.fileTtlMs + 60_000;
        await s.engine.sweep();
        expect(await s.ledger.reservedFor(user.userId)).toBe(0);
        const gone = await postJson(s.url, '/get-task-status', user.key, { data: { taskId } });
        expect(gone.status).toBe(404);
        const b = await s.ledger.balance({ userId: user.userId, email: `sweep-${store}@example.com` });
        expect(b.currentCredits).toBe(GRANTED);
      } finally {
        await s.stop();
      }
    }, 120_000);
  }
});
