/**
 * Team scale: 2 `crisp serve` API processes (`--workers 0`) and 2 `crisp worker` processes on one
 * PostgreSQL and one shared `--storage` directory — the topology of docs/deploy.md#team-scale — as real
 * processes. Every wait is bounded; every process is killed in afterAll.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { anyImagePoint, createTestGate, type TestGate } from '../helpers/testGate.js';
import {
  BASIC,
  httpGet,
  httpPut,
  pollStatus,
  postForm,
  postJson,
  taskForm,
  tempDir,
  type HttpAnswer,
} from './helpers.js';
import { crispCli, startServe, startWorker, type ServeProcess, type WorkerProcess } from './serveProcess.js';

const LEASE_MS = 2_000;

let pgServer: TempPostgres;
let pool: Pool;
let dbUrl: string;
let root: string;
let storage: string;
const apis: ServeProcess[] = [];
const workers: WorkerProcess[] = [];
let small: Buffer;
let gate: TestGate;

async function image(size: number, seed: number): Promise<Buffer> {
  const raw = Buffer.alloc(size * size * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 31 + seed * 17 + ((i / 3) | 0) * 7) & 0xff;
  return sharp(raw, { raw: { width: size, height: size, channels: 3 } })
    .png()
    .toBuffer();
}

async function worker(): Promise<WorkerProcess> {
  const w = await startWorker(
    ['--db', dbUrl, '--storage', storage, '--lease', String(LEASE_MS), '--threads', '1'],
    gate.env,
  );
  workers.push(w);
  return w;
}

async function api(name: string): Promise<ServeProcess> {
  const data = path.join(root, name);
  await mkdir(data, { recursive: true });
  const s = await startServe(data, [
    '--db',
    dbUrl,
    '--storage',
    storage,
    '--workers',
    '0',
    '--lease',
    String(LEASE_MS),
    '--max-tasks-per-user',
    '50',
    '--rate-limit',
    '100000',
    '--metrics-token',
    'metrics-secret',
  ]);
  apis.push(s);
  return s;
}

async function users(n: number, credits: number, prefix: string): Promise<{ key: string; userId: string }[]> {
  const store = createPgAccountStore(pool);
  const out = [];
  for (let i = 0; i < n; i++) {
    const { account, apiKey } = await store.addUser({ email: `${prefix}${i}@example.com`, credits });
    out.push({ key: apiKey, userId: account.userId });
  }
  return out;
}

async function balance(userId: string): Promise<number> {
  const { rows } = await pool.query<{ credits: number }>('SELECT credits FROM users WHERE user_id = $1', [userId]);
  return rows[0]!.credits;
}

const start = (base: string, key: string, bytes: Buffer, files = 1): Promise<HttpAnswer> =>
  postForm(
    base,
    key,
    taskForm(
      { ...BASIC, scale: '2' },
      Array.from({ length: files }, (_, i) => ({ name: 'file', fileName: `in${i}.png`, bytes })),
    ),
  );

/** Waits (bounded) until `check` returns a value. */
async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  pgServer = await startTempPostgres();
  dbUrl = await createDatabase(pgServer.url, 'crisp_team');
  pool = await openPostgres(dbUrl, { max: 10 });
  root = await tempDir('crisp-team-');
  storage = path.join(root, 'shared');
  small = await image(16, 1);
  gate = await createTestGate();
  // Four processes starting together also race for the shared signing secret (one must win for all).
  await Promise.all([api('api-a'), api('api-b'), worker(), worker()]);
}, 120_000);

afterAll(async () => {
  await Promise.all([...apis, ...workers].map((p) => p.kill()));
  await pool?.end();
  await pgServer?.stop();
  if (root) await rm(root, { recursive: true, force: true });
  await gate?.close();
});

/** The figures /metrics reports, read from the second API process (they come from the database). */
async function teamMetrics(): Promise<{ processed: number; queueDepth: number; durations: number; charged: number }> {
  const m = await httpGet(`${apis[1]!.url}/metrics`, { authorization: 'Bearer metrics-secret' });
  expect(m.status).toBe(200);
  const text = m.bytes.toString();
  const figure = (name: string): number => {
    const v = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)?.[1];
    expect(v, name).toBeDefined();
    return Number(v);
  };
  return {
    processed: figure('crisp_tasks{status="PROCESSED"}'),
    queueDepth: figure('crisp_queue_depth'),
    durations: figure('crisp_task_duration_seconds_count'),
    charged: figure('crisp_credits_charged_total'),
  };
}

describe('2 API processes + 2 workers on one PostgreSQL and one storage directory', () => {
  it('200 concurrent start-tasks from 20 users with credit for half: every accepted task finishes, charged once', async () => {
    const team = await users(20, 5, 'u');
    const before = await Promise.all(team.map((u) => balance(u.userId)));
    // The file's other tests (in any order: --sequence.shuffle) add their own tasks: count from here.
    const metricsBefore = await teamMetrics();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const u = team[i % 20]!;
        return start(apis[i % 2]!.url, u.key, small).then((a) => ({ a, u }));
      }),
    );
    const accepted = answers.filter((x) => x.a.status === 200);
    const refused = answers.filter((x) => x.a.status !== 200);
    expect(accepted).toHaveLength(100);
    for (const r of refused) {
      expect(r.a.status).toBe(402);
      expect(r.a.text).toContain('Insufficient credits');
    }
    for (const u of team) expect(accepted.filter((x) => x.u === u)).toHaveLength(5);

    // Poll each through the API process that did not accept it: the state is shared.
    const done = await Promise.all(
      accepted.map(({ a, u }, i) =>
        pollStatus(apis[(i + 1) % 2]!.url, u.key, (a.json as { data: { taskId: string } }).data.taskId, 110_000),
      ),
    );
    for (const d of done) {
      expect(d.status).toBe('PROCESSED');
      expect(d.creditsDeducted).toBe(true);
      expect(d.deductedCredits).toBe(1);
      expect(d.files).toHaveLength(1);
      expect(d.files[0]!.dimensions).toEqual({ width: 32, height: 32 });
    }
    const after = await Promise.all(team.map((u) => balance(u.userId)));
    for (const b of after) expect(b).toBe(0);
    const drops = before.reduce((s, b, i) => s + b - after[i]!, 0);
    const { rows } = await pool.query<{ n: number; sum: number }>(
      `SELECT count(*)::int AS n, coalesce(sum(deducted), 0)::int AS sum FROM charges WHERE state = 'settled' AND user_id = ANY($1)`,
      [team.map((u) => u.userId)],
    );
    expect(rows[0]).toEqual({ n: 100, sum: 100 });
    expect(drops).toBe(100);

    // /metrics on either API process counts every process's tasks (from the database).
    const metricsAfter = await teamMetrics();
    expect(metricsAfter.queueDepth).toBe(0);
    expect({
      processed: metricsAfter.processed - metricsBefore.processed,
      durations: metricsAfter.durations - metricsBefore.durations,
      charged: metricsAfter.charged - metricsBefore.charged,
    }).toEqual({ processed: 100, durations: 100, charged: 100 });

    // A download link signed by one API process verifies on the other (shared secret) and serves the worker's file.
    const link = new URL(done[0]!.files[0]!.downloadLink);
    const other = new URL(apis[1]!.url);
    link.host = other.host;
    const got = await httpGet(link.toString());
    expect(got.status).toBe(200);
    expect(got.bytes.length).toBe(done[0]!.files[0]!.fileSize);
    expect((await sharp(got.bytes).metadata()).width).toBe(32);
  }, 150_000);

  it('a multipart upload whose parts go to both API processes at once keeps every part', async () => {
    const [u] = await users(1, 10, 'm');
    // 3 parts of 5 MiB; complete checks each part's ETag and the file's magic bytes.
    const file = Buffer.alloc(12 * 1024 * 1024, 7);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(file);
    for (let round = 0; round < 4; round++) {
      const created = await postJson(apis[round % 2]!.url, '/get-upload-url', u!.key, {
        data: { fileSize: file.length, fileType: 'image/png', originalFileName: 'big.png' },
      });
      expect(created.status).toBe(200);
      const session = (
        created.json as {
          data: {
            uploadId: string;
            path: string;
            partSize: number;
            partUrls: { partNumber: number; signedUrl: string }[];
          };
        }
      ).data;
      expect(session.partUrls).toHaveLength(3);
      const puts = await Promise.all(
        session.partUrls.map((p, i) => {
          // Through the other API process for every second part, as a round-robin proxy would send them.
          const url = new URL(p.signedUrl);
          url.host = new URL(apis[i % 2]!.url).host;
          return httpPut(url.toString(), file.subarray(i * session.partSize, (i + 1) * session.partSize));
        }),
      );
      for (const r of puts) expect(r.status).toBe(200);
      const parts = puts.map((r, i) => ({ PartNumber: i + 1, ETag: String(r.headers.etag) }));
      const done = await postJson(apis[(round + 1) % 2]!.url, '/complete-multipart-upload', u!.key, {
        data: { uploadId: session.uploadId, key: session.path, parts },
      });
      expect(done.status).toBe(200);
      expect((await readFile(path.join(storage, session.path))).equals(file)).toBe(true);
    }
  }, 120_000);

  it('kill -9 of the worker running a task: the other worker finishes it, charged once', async () => {
    const [u] = await users(1, 10, 'k');
    const big = await image(64, 2);
    // Hold the task before its second image (test gate): the first is done, the task is surely mid-run,
    // whatever the speed of the machine. The gate is released only after the kill, for the survivor.
    await gate.hold(anyImagePoint(1));
    const a = await start(apis[0]!.url, u!.key, big, 6);
    expect(a.status).toBe(200);
    const taskId = (a.json as { data: { taskId: string } }).data.taskId;
    const cost = (a.json as { data: { creditsToDeduct: number } }).data.creditsToDeduct;
    expect(cost).toBe(6);
    const pid = await gate.reached(anyImagePoint(1));
    // The held worker's progress (written to the database with the lease) reaches polls on the other API process.
    await until('progress on the other API process', async () => {
      const r = await postJson(apis[1]!.url, '/get-task-status', u!.key, { data: { taskId } });
      const d = (r.json as { data: { status: string; progress: string } }).data;
      const p = Number(/^(\d+)%$/.exec(d.progress)?.[1]);
      return d.status === 'ENHANCING' && p > 0 && p < 50 ? true : undefined;
    });
    const { rows: held } = await pool.query<{ locked_by: string | null }>(
      'SELECT locked_by FROM tasks WHERE task_id = $1',
      [taskId],
    );
    expect(held[0]!.locked_by?.split(':')[1]).toBe(String(pid));
    const victim = workers.find((w) => w.child.pid === pid);
    expect(victim).toBeDefined();
    await victim!.kill();
    await gate.release(anyImagePoint(1));
    const d = await pollStatus(apis[1]!.url, u!.key, taskId, 110_000);
    expect(d.status).toBe('PROCESSED');
    expect(d.files).toHaveLength(6);
    expect(d.deductedCredits).toBe(6);
    const { rows } = await pool.query<{ attempts: number; locked_by: string | null }>(
      'SELECT attempts, locked_by FROM tasks WHERE task_id = $1',
      [taskId],
    );
    expect(rows[0]!.attempts).toBe(2);
    expect(rows[0]!.locked_by).toBeNull();
    expect(await balance(u!.userId)).toBe(4);
    const charges = await pool.query('SELECT state, cost, deducted FROM charges WHERE task_id = $1', [taskId]);
    expect(charges.rows).toEqual([{ state: 'settled', cost: 6, deducted: 6 }]);
    // Every output the survivor wrote is whole on the shared disk.
    for (const f of d.files) {
      const bytes = await readFile(path.join(storage, 'tasks', taskId, 'outputs', f.fileName));
      expect(bytes.length).toBe(f.fileSize);
      expect((await sharp(bytes).metadata()).width).toBe(128);
    }
  }, 150_000);

  it('kill -9 of an API process: clients retrying through the other one lose nothing', async () => {
    const [u] = await users(1, 10, 'a');
    const first = await Promise.all(Array.from({ length: 3 }, () => start(apis[0]!.url, u!.key, small)));
    for (const r of first) expect(r.status).toBe(200);
    await apis[0]!.kill();
    // A client whose request finds the process gone retries through the other one.
    let retried: HttpAnswer | undefined;
    try {
      retried = await start(apis[0]!.url, u!.key, small);
    } catch (e) {
      const err = e as { code?: string; cause?: { code?: string } };
      expect(err.code ?? err.cause?.code).toBe('ECONNREFUSED');
      retried = await start(apis[1]!.url, u!.key, small);
    }
    expect(retried.status).toBe(200);
    const ids = [...first, retried].map((r) => (r.json as { data: { taskId: string } }).data.taskId);
    const done = await Promise.all(ids.map((id) => pollStatus(apis[1]!.url, u!.key, id, 110_000)));
    for (const d of done) {
      expect(d.status).toBe('PROCESSED');
      expect(d.deductedCredits).toBe(1);
      const got = await httpGet(d.files[0]!.downloadLink);
      expect(got.status).toBe(200);
      expect(got.bytes.length).toBe(d.files[0]!.fileSize);
    }
    expect(await balance(u!.userId)).toBe(6);
    // The other tests (in whatever order they run) still find two API processes.
    apis[0] = await api('api-c');
  }, 150_000);

  it('refuses incomplete worker and serve flags with a clear error', async () => {
    const noDb = await crispCli(['worker', '--storage', storage]);
    expect(noDb.code).toBe(1);
    expect(noDb.stderr.trim()).toBe(
      'crisp: error: crisp worker needs --db postgres://… (or CRISP_DB_URL): the queue lives there',
    );
    const noStorage = await crispCli(['worker', '--db', dbUrl]);
    expect(noStorage.code).toBe(1);
    expect(noStorage.stderr.trim()).toBe(
      'crisp: error: crisp worker needs --storage: the directory or s3://bucket/prefix the servers keep tasks in (their --storage)',
    );
    const workersAlone = await crispCli(['serve', '--workers', '2', '--data', path.join(root, 'none')]);
    expect(workersAlone.code).toBe(1);
    expect(workersAlone.stderr.trim()).toBe(
      'crisp: error: --workers and --lease need --db (without a database this process runs every task itself)',
    );
  }, 60_000);
});
