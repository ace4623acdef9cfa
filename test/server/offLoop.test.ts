/**
 * Issue 25: an image's heavy work never runs on the server's event loop (engine/core runs it in worker threads).
 *
 * - Embedded `crisp serve` (one process): while a task whose output is 16.7 MP (1024² ×4) runs, another user's
 *   status polls all answer and the server's event-loop delay (/metrics: perf_hooks, and the same less the
 *   time the thread waited for a CPU held by other processes) stays under 100 ms at its maximum. The raw
 *   perf_hooks figure is printed too; on a shared machine it also counts the kernel's scheduling of everybody
 *   else's work (an idle Node process saw 40 ms on this 2-core box at load 18), which no code here can remove.
 * - PostgreSQL: a `crisp worker` with `--lease 3000` whose image is held for longer than two leases still
 *   heartbeats, so the task ends PROCESSED with attempts = 1 although a second worker is waiting to take it.
 *
 * Both hold the job after its first tile with the test-only gate (CRISP_TEST_GATE_DIR point `core-first-tile`, engine/core/testGate.ts:
 * it blocks the core worker thread synchronously, as a long pixel loop would), so the checks happen while the
 * job is known to be mid-run instead of racing the machine's speed; every wait is bounded.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { createTestGate } from '../helpers/testGate.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { BASIC, httpGet, postForm, postJson, pollStatus, taskForm, tempDir, type StatusData } from './helpers.js';
import { addCliUser, startServe, startWorker, type ServeProcess, type WorkerProcess } from './serveProcess.js';

const METRICS = { authorization: 'Bearer loop-secret' };
const procs: { kill(): Promise<void> }[] = [];
let root: string;
let big: Buffer;

/** Waits (bounded: only a hang fails it) until `check` returns a value. */
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The max event-loop delay (seconds) /metrics reports for the interval since the previous scrape: `raw` as
 * perf_hooks measures it, `own` less the time the server's thread waited for a CPU other processes held.
 */
async function loopMax(url: string): Promise<{ raw: number; own: number }> {
  const m = await httpGet(`${url}/metrics`, METRICS);
  expect(m.status).toBe(200);
  const text = m.bytes.toString();
  const raw = /^crisp_event_loop_delay_seconds_max (\S+)$/m.exec(text)?.[1];
  const own = /^crisp_event_loop_own_delay_seconds_max (\S+)$/m.exec(text)?.[1];
  expect(raw).toBeDefined();
  expect(own).toBeDefined();
  return { raw: Number(raw), own: Number(own) };
}

async function status(url: string, key: string, taskId: string): Promise<{ code: number; data?: StatusData }> {
  const r = await postJson(url, '/get-task-status', key, { data: { taskId } });
  return { code: r.status, ...(r.status === 200 ? { data: (r.json as { data: StatusData }).data } : {}) };
}

const taskIdOf = (a: { json: unknown }) => (a.json as { data: { taskId: string } }).data.taskId;

beforeAll(async () => {
  root = await tempDir('crisp-offloop-');
  // A real photo at 1024×1024: ×4 gives a 4096×4096 (16.7 MP) output.
  big = await sharp(path.join(IMAGES_DIR, 'set14/baboon.png')).resize(1024, 1024).jpeg({ quality: 92 }).toBuffer();
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  if (root) await rm(root, { recursive: true, force: true });
});

describe('embedded crisp serve: a 16 MP task runs off the event loop', () => {
  it('keeps the max loop delay, less waits for a CPU other processes held, under 100 ms; every other status poll answers', async () => {
    const dataDir = path.join(root, 'serve');
    const gate = await createTestGate();
    const heavy = await addCliUser(dataDir, 'heavy@example.com', 100);
    const other = await addCliUser(dataDir, 'other@example.com', 100);
    const serve: ServeProcess = await startServe(
      dataDir,
      ['--threads', '1', '--metrics-token', 'loop-secret', '--rate-limit', '100000'],
      gate.env,
    );
    procs.push(serve);
    const url = serve.url;

    // The other user's own small task, finished before the big one starts (its polls are what must keep answering).
    const tiny = await sharp(path.join(IMAGES_DIR, 'set5/bird.png')).resize(32, 32).png().toBuffer();
    const small = await postForm(url, other, taskForm(BASIC, [{ name: 'file', fileName: 't.png', bytes: tiny }]));
    expect(small.status).toBe(200);
    const smallId = taskIdOf(small);
    expect((await pollStatus(url, other, smallId)).status).toBe('PROCESSED');
    await gate.hold('core-first-tile');
    await loopMax(url); // the measured interval starts here: start-up and the small task are not in it

    const started = await postForm(
      url,
      heavy,
      taskForm({ ...BASIC, scale: '4', saveImageAs: 'jpg' }, [{ name: 'file', fileName: 'big.jpg', bytes: big }]),
    );
    expect(started.status).toBe(200);
    const bigId = taskIdOf(started);

    let polls = 0;
    const failures: string[] = [];
    let pollMaxMs = 0;
    let stop = false;
    const poller = (async () => {
      while (!stop) {
        const t = performance.now();
        const r = await status(url, other, smallId);
        pollMaxMs = Math.max(pollMaxMs, performance.now() - t);
        polls++;
        if (r.code !== 200 || r.data?.status !== 'PROCESSED') failures.push(`${r.code} ${r.data?.status}`);
        await new Promise((res) => setTimeout(res, 100));
      }
    })();

    // Held mid-run (after its first tile): it is ENHANCING, and the other user's polls are answered meanwhile.
    await gate.reached('core-first-tile');
    const mid = await status(url, heavy, bigId);
    expect(mid.data?.status).toBe('ENHANCING');
    const pollsAtHold = polls;
    await until('polls during the hold', () => (polls >= pollsAtHold + 5 ? true : undefined));
    await gate.release('core-first-tile');
    await gate.close();

    // Then the rest of the tiles, stitching and the 16.7 MP encode run for real; metrics are scraped as it goes.
    const scrapes: { raw: number; own: number }[] = [];
    let done: StatusData | undefined;
    while (!done) {
      await new Promise((r) => setTimeout(r, 500));
      scrapes.push(await loopMax(url));
      const s = await status(url, heavy, bigId);
      if (s.data?.status === 'PROCESSED' || s.data?.status === 'PROCESSING_FAILED') done = s.data;
    }
    scrapes.push(await loopMax(url));
    const maxRaw = Math.max(...scrapes.map((x) => x.raw));
    const maxOwn = Math.max(...scrapes.map((x) => x.own));
    stop = true;
    await poller;

    expect(done.status).toBe('PROCESSED');
    expect(done.files[0]!.dimensions).toEqual({ width: 4096, height: 4096 });
    expect(failures).toEqual([]);
    expect(polls).toBeGreaterThan(pollsAtHold + 5);
    console.log(
      `offLoop: ${polls} status polls, slowest ${pollMaxMs.toFixed(0)} ms; server max event-loop delay ${(maxRaw * 1000).toFixed(1)} ms, ` +
        `${(maxOwn * 1000).toFixed(1)} ms less waits for a CPU held by other processes ` +
        `(per scrape, raw/own ms: ${scrapes.map((v) => `${(v.raw * 1000).toFixed(0)}/${(v.own * 1000).toFixed(0)}`).join(' ')})`,
    );
    // Before core, one tile's inference alone held this loop for seconds (issue 25: 8.8 s).
    expect(maxOwn).toBeLessThan(0.1);
  }, 300_000);
});

describe('PostgreSQL: a worker whose image takes longer than its lease keeps it', () => {
  let pg: TempPostgres;
  let pool: Pool;

  beforeAll(async () => {
    pg = await startTempPostgres();
  }, 120_000);
  afterAll(async () => {
    // The API and worker processes hold sessions: they go before the database does.
    await Promise.all(procs.map((p) => p.kill()));
    await pool?.end();
    await pg?.stop();
  });

  it('--lease 3000, the image held past two leases, a second worker waiting: PROCESSED with attempts = 1', async () => {
    const dbUrl = await createDatabase(pg.url, 'crisp_offloop');
    pool = await openPostgres(dbUrl, { max: 4 });
    const storage = path.join(root, 'shared');
    const gate = await createTestGate();
    await gate.hold('core-first-tile');
    await mkdir(path.join(root, 'api'), { recursive: true });
    const lease = ['--lease', '3000'];
    const api = await startServe(path.join(root, 'api'), [
      '--db',
      dbUrl,
      '--storage',
      storage,
      '--workers',
      '0',
      ...lease,
    ]);
    procs.push(api);
    const { apiKey } = await createPgAccountStore(pool).addUser({ email: 'lease@example.com', credits: 100 });
    // The held worker starts first and alone, so it is the one that claims the task.
    const held: WorkerProcess = await startWorker(
      ['--db', dbUrl, '--storage', storage, ...lease, '--threads', '1'],
      gate.env,
    );
    procs.push(held);
    const image = await sharp(path.join(IMAGES_DIR, 'set5/baby.png')).resize(256, 256).png().toBuffer();
    const started = await postForm(
      api.url,
      apiKey,
      taskForm(BASIC, [{ name: 'file', fileName: 'baby.png', bytes: image }]),
    );
    expect(started.status).toBe(200);
    const taskId = taskIdOf(started);
    await gate.reached('core-first-tile');
    // A second worker that would take the task the moment its lease lapsed.
    const rival = await startWorker(['--db', dbUrl, '--storage', storage, ...lease, '--threads', '1']);
    procs.push(rival);
    const lapse = async () =>
      (
        await pool.query<{ lapsed: boolean; attempts: number; locked_by: string | null }>(
          'SELECT locked_until < now() AS lapsed, attempts, locked_by FROM tasks WHERE task_id = $1',
          [taskId],
        )
      ).rows[0]!;
    const claimedBy = (await lapse()).locked_by;
    // Two whole leases pass while the image is held (the wait is the condition itself, not a guess at speed).
    const end = Date.now() + 2 * 3000 + 500;
    while (Date.now() < end) {
      const row = await lapse();
      expect(row.lapsed).toBe(false);
      expect(row.locked_by).toBe(claimedBy);
      await new Promise((r) => setTimeout(r, 250));
    }
    await gate.release('core-first-tile');
    await gate.close();
    const done = await pollStatus(api.url, apiKey, taskId);
    expect(done.status).toBe('PROCESSED');
    expect(done.files[0]!.dimensions).toEqual({ width: 512, height: 512 });
    const { rows } = await pool.query<{ attempts: number }>('SELECT attempts FROM tasks WHERE task_id = $1', [taskId]);
    expect(rows[0]!.attempts).toBe(1);
    expect(held.output()).not.toContain('lease lost');
  }, 240_000);
});
