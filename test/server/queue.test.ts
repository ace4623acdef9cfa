/**
 * The PostgreSQL task queue in one process (the multi-process runs are in team.test.ts): an API-only server
 * (`workers: 0`) queues, a worker engine on the same database and storage claims. Dead letter: a task
 * claimed more times than allowed ends PROCESSING_FAILED with its reservation freed, charging nothing.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresEngine } from '../../engine/service/postgresEngine.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { createPgLedger } from '../../engine/service/credits/pgLedger.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import {
  addUser,
  BASIC,
  dataOf,
  postForm,
  postJson,
  startTestServer,
  taskForm,
  tempDir,
  type StatusData,
  type TestServer,
} from './helpers.js';

let pgServer: TempPostgres;
let pgUrl: string;
let pool: Pool;
let api: TestServer;
let storage: string;

beforeAll(async () => {
  pgServer = await startTempPostgres();
  const url = await createDatabase(pgServer.url, 'crisp_queue');
  pgUrl = url;
  pool = await openPostgres(url);
  storage = await tempDir('crisp-queue-');
  api = await startTestServer({ db: url, workers: 0, storageDir: storage });
}, 60_000);

afterAll(async () => {
  await api?.stop();
  await pool?.end();
  await pgServer?.stop();
});

describe('PostgreSQL task queue', () => {
  it('API only (--workers 0) queues; a task claimed past maxAttempts is dead-lettered, uncharged; the next one runs', async () => {
    const { key, userId } = await addUser(api, 'q@example.com', 5);
    const bytes = new Uint8Array(
      await sharp({ create: { width: 16, height: 16, channels: 3, background: { r: 1, g: 2, b: 3 } } })
        .png()
        .toBuffer(),
    );
    const start = () => postForm(api.url, key, taskForm(BASIC, [{ name: 'file', fileName: 'a.png', bytes }]));
    const doomed = await start();
    expect(doomed.status).toBe(200);
    const doomedId = dataOf<{ taskId: string }>(doomed).taskId;
    // Nobody runs it: it waits in the queue, reserved.
    const { rows } = await pool.query('SELECT status, attempts, locked_by FROM tasks WHERE task_id = $1', [doomedId]);
    expect(rows).toEqual([{ status: 'PROCESSING', attempts: 0, locked_by: null }]);
    // As if its workers had died while running it four times.
    await pool.query('UPDATE tasks SET attempts = 4 WHERE task_id = $1', [doomedId]);
    const fine = await start();
    const fineId = dataOf<{ taskId: string }>(fine).taskId;

    const worker = await createPostgresEngine({
      dataDir: storage,
      credits: createPgLedger(pool),
      queue: { pool, workers: 1, leaseMs: 2_000, pollMs: 50 },
      modelDirs: [ONNX_DIR],
      sweepIntervalMs: 0,
    });
    try {
      const poll = async (taskId: string): Promise<StatusData> => {
        const end = Date.now() + 60_000;
        for (;;) {
          const r = await postJson(api.url, '/get-task-status', key, { data: { taskId } });
          expect(r.status).toBe(200);
          const d = dataOf<StatusData>(r);
          if (d.status === 'PROCESSED' || d.status === 'PROCESSING_FAILED') return d;
          if (Date.now() > end) throw new Error(`task still ${d.status}`);
          await new Promise((res) => setTimeout(res, 50));
        }
      };
      const dead = await poll(doomedId);
      expect(dead.status).toBe('PROCESSING_FAILED');
      expect(dead.error).toBe(
        'Crisp stopped 3 times while this task was running, so it was not tried again. Start it again, or try a smaller image.',
      );
      expect(dead.creditsDeducted).toBe(false);
      const ok = await poll(fineId);
      expect(ok.status).toBe('PROCESSED');
      expect(ok.deductedCredits).toBe(1);
      // This test's tasks only: another test of this file may have run first.
      const charges = await pool.query('SELECT task_id, state FROM charges WHERE task_id = ANY($1) ORDER BY state', [
        [doomedId, fineId],
      ]);
      expect(charges.rows).toEqual([
        { task_id: doomedId, state: 'released' },
        { task_id: fineId, state: 'settled' },
      ]);
      const { rows: users } = await pool.query('SELECT credits FROM users WHERE user_id = $1', [userId]);
      expect(users).toEqual([{ credits: 4 }]);
    } finally {
      await worker.close();
    }
  }, 120_000);

  it('per-user output and task quotas count the tasks a user started through every API process', async () => {
    // A second API process on the same database and storage; neither runs tasks, so they stay queued.
    const other = await startTestServer({
      db: pgUrl,
      workers: 0,
      storageDir: storage,
      engineLimits: { maxOutputsPerUser: 3, maxTasksPerUser: 3 },
    });
    const strict = await startTestServer({
      db: pgUrl,
      workers: 0,
      storageDir: storage,
      engineLimits: { maxOutputsPerUser: 3, maxTasksPerUser: 3 },
    });
    try {
      const { key } = await addUser(other, 'quota@example.com', 50);
      const bytes = new Uint8Array(
        await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 9, g: 9, b: 9 } } })
          .png()
          .toBuffer(),
      );
      const start = (s: TestServer, n: number) =>
        postForm(
          s.url,
          key,
          taskForm(
            BASIC,
            Array.from({ length: n }, (_, i) => ({ name: 'file', fileName: `q${i}.png`, bytes })),
          ),
        );
      expect((await start(other, 2)).status).toBe(200);
      // This process holds none of the user's tasks in memory, yet refuses: 2 queued elsewhere + 2 > 3.
      const over = await start(strict, 2);
      expect(over.status).toBe(400);
      expect(JSON.parse(over.text)).toBe(
        'Bad Request: your tasks hold 2 output files and this one adds 2; the limit is 3. Wait for older outputs to expire',
      );
      expect((await start(strict, 1)).status).toBe(200);
      // Full now, whichever process is asked.
      const full = await start(other, 1);
      expect(full.status).toBe(400);
      expect(JSON.parse(full.text)).toBe(
        'Bad Request: your tasks hold 3 output files and this one adds 1; the limit is 3. Wait for older outputs to expire',
      );
      // Failed tasks hold nothing.
      await pool.query(
        `UPDATE tasks SET status = 'PROCESSING_FAILED' WHERE user_id = (SELECT user_id FROM users WHERE email = 'quota@example.com')`,
      );
      expect((await start(strict, 3)).status).toBe(200);
    } finally {
      await other.stop();
      await strict.stop();
    }
  }, 60_000);
});
