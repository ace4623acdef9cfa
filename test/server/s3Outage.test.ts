/**
 * The bucket stops answering: s3rver in a process of its own (s3rverProcess.ts), stopped with SIGSTOP for longer
 * than a call's deadline, then resumed with SIGCONT. A stopped process still accepts connections (the kernel
 * does) but never answers: the worst kind of outage. Every call fails within its deadline with the catalog's
 * 503 error and no address or socket error in what a client could see; a call that starts during the outage
 * rides it out when the bucket returns before its attempts run out; a queued task's staging waits the outage
 * out. Waits are bounded only to catch hangs; nothing depends on the machine's speed (the outage ends only
 * after the test has seen an attempt fail).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogMessage } from '../../engine/contract/errorCatalog.js';
import { StorageUnavailableError } from '../../engine/service/storage/objectStore.js';
import { S3ObjectStore, type BucketDeadlines } from '../../engine/service/storage/s3ObjectStore.js';
import { stageInputs, sweepOrphanTasks } from '../../engine/service/tasks/taskObjects.js';
import { S3UploadStore } from '../../engine/service/uploads/s3UploadStore.js';
import { TaskStore } from '../../engine/service/tasks/taskStore.js';
import type { StoredTask } from '../../engine/service/tasks/taskTypes.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { BASIC, dataOf, httpGet, pollStatus, postForm, postJson, taskForm, tempDir } from './helpers.js';
import { startServe, startWorker, type ServeProcess, type WorkerProcess } from './serveProcess.js';

const BUCKET = 'crisp-outage';
let root: string;
let bucket: ChildProcess;
let endpoint: string;
const stores: S3ObjectStore[] = [];

beforeAll(async () => {
  root = await tempDir('crisp-s3-outage-');
  await mkdir(path.join(root, 'bucket'));
  bucket = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(REPO_ROOT, 'test', 'server', 's3rverProcess.ts'), path.join(root, 'bucket'), BUCKET],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    bucket.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /s3rver listening on (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    bucket.once('exit', (code) => reject(new Error(`s3rver exited (${code}): ${out}`)));
  });
  endpoint = `http://127.0.0.1:${port}`;
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' });
}, 60_000);

afterAll(async () => {
  for (const s of stores) s.close();
  if (bucket && bucket.exitCode === null) {
    bucket.kill('SIGCONT');
    const exited = new Promise((r) => bucket.once('exit', r));
    bucket.kill('SIGTERM');
    await exited;
  }
  if (root) await rm(root, { recursive: true, force: true });
});

/** A store on the bucket with short deadlines; `retried` resolves at its first failed attempt after `arm()`. */
function storeWith(deadlines: Partial<BucketDeadlines>) {
  let notify: (() => void) | undefined;
  const failures: string[] = [];
  const store = new S3ObjectStore(
    { bucket: BUCKET, prefix: 'p/', endpoint },
    {
      ...deadlines,
      onRetry: (detail) => {
        failures.push(detail);
        notify?.();
      },
    },
  );
  stores.push(store);
  return {
    store,
    failures,
    /** Resolves at the next failed attempt. */
    nextFailure: () => new Promise<void>((r) => (notify = r)),
  };
}

const stop = () => bucket.kill('SIGSTOP');
const resume = () => bucket.kill('SIGCONT');

describe('a bucket that stops answering', () => {
  it('every call fails within its deadline with the 503 error, naming no address; the store works again after', async () => {
    const { store, failures } = storeWith({ callMs: 400, attempts: 2, backoffMs: 20, pingMs: 400 });
    await store.putJson('a.json', { n: 1 });
    stop();
    try {
      for (const call of [() => store.getJson('a.json'), () => store.ping(), () => store.list('')]) {
        const started = Date.now();
        const e = await call().then(
          () => undefined,
          (err: unknown) => err,
        );
        // Bounds a hang: two 400 ms attempts and a pause, with room for a loaded machine.
        expect(Date.now() - started).toBeLessThan(15_000);
        expect(e).toBeInstanceOf(StorageUnavailableError);
        const err = e as StorageUnavailableError;
        expect([err.code, err.status, err.message]).toEqual([
          'storage-unavailable',
          503,
          catalogMessage('storage-unavailable'),
        ]);
        expect(err.operatorDetail).toMatch(/no answer within \d+ ms \(\d attempts?\)$/);
        expect(`${err.message} ${err.operatorDetail}`).not.toMatch(/127\.0\.0\.1|localhost|ECONN|<\?xml/);
      }
      expect(failures.length).toBeGreaterThanOrEqual(5);
    } finally {
      resume();
    }
    expect(await store.getJson('a.json')).toEqual({ n: 1 });
  }, 60_000);

  it('a call that starts during the outage rides it out when the bucket returns before its attempts run out', async () => {
    const { store, nextFailure } = storeWith({ callMs: 300, attempts: 100, backoffMs: 20 });
    stop();
    const failed = nextFailure();
    const put = store.putJson('b.json', { n: 2 });
    put.catch(() => undefined); // awaited below
    try {
      // The outage outlasts one attempt's deadline before the bucket comes back.
      await failed;
    } finally {
      resume();
    }
    await put;
    expect(await store.getJson('b.json')).toEqual({ n: 2 });
  }, 60_000);

  it('start-task with an upload while the bucket is down is an outage (503), not "not a completed upload of yours"', async () => {
    const { store } = storeWith({ callMs: 300, attempts: 1, backoffMs: 20 });
    const uploads = new S3UploadStore(store, { maxFileSize: 1 << 20, uploadTtlMs: 60_000, fileTtlMs: 60_000 });
    const caller = { userId: 'usr_outage', email: 'o@example.com' };
    const filePath = 'uploads/7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b/1f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b.png';
    // With the bucket up, an unknown upload is the caller's mistake: the 400.
    await expect(uploads.resolveCompleted(caller, filePath, 0, path.join(root, 'copy.png'))).rejects.toMatchObject({
      code: 'bad-request',
    });
    stop();
    try {
      await expect(uploads.resolveCompleted(caller, filePath, 0, path.join(root, 'copy.png'))).rejects.toMatchObject({
        code: 'storage-unavailable',
        status: 503,
      });
    } finally {
      resume();
    }
  }, 60_000);

  it('the sweep finds task objects no record names by listing, and leaves young ones and known ones', async () => {
    const { store } = storeWith({});
    const src = path.join(root, 'orphan.bin');
    await writeFile(src, 'x');
    const known = '11111111-1111-4111-8111-111111111111';
    const orphan = '22222222-2222-4222-8222-222222222222';
    for (const id of [known, orphan]) {
      await store.upload(`tasks/${id}/inputs/0`, src);
      await store.upload(`tasks/${id}/inputs/1`, src);
    }
    const isKnown = async (id: string) => id === known;
    // Younger than the cutoff: a start-task may still be between its two steps.
    expect(await sweepOrphanTasks(store, isKnown, Date.now() - 3_600_000)).toEqual([]);
    expect(await sweepOrphanTasks(store, isKnown, Date.now() + 60_000)).toEqual([orphan]);
    expect((await store.list('tasks/')).sort()).toEqual([`tasks/${known}/inputs/0`, `tasks/${known}/inputs/1`]);
  }, 60_000);

  it("a queued task's staging waits out an outage longer than its calls' attempts, then has its input", async () => {
    const { store, failures, nextFailure } = storeWith({ callMs: 300, attempts: 1, backoffMs: 20 });
    const bytes = Buffer.from('input bytes of a queued task');
    const src = path.join(root, 'src.bin');
    await writeFile(src, bytes);
    await store.upload('tasks/t1/inputs/0', src);
    const tasks = new TaskStore(path.join(root, 'worker'));
    const task = {
      id: '7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b',
      inputs: [{ originalFileName: 'a.png', objectKey: 'tasks/t1/inputs/0' }],
    };
    stop();
    // Every call of the store gives up after one attempt: two failed calls mean the staging waited, not failed.
    const first = nextFailure();
    const staged = stageInputs(store, tasks, task as unknown as StoredTask, 60_000);
    staged.catch(() => undefined); // awaited below
    try {
      await first;
      const second = nextFailure();
      await second;
      expect(failures.length).toBeGreaterThanOrEqual(2);
    } finally {
      resume();
    }
    await staged;
    const local = task.inputs[0] as { path?: string };
    expect(local.path).toBeDefined();
    expect(await readFile(local.path!)).toEqual(bytes);
  }, 90_000);
});

describe('crisp serve on the bucket while it is stopped', () => {
  let pg: TempPostgres | undefined;
  let pool: Pool | undefined;
  let api: ServeProcess | undefined;
  beforeAll(async () => {
    pg = await startTempPostgres();
  }, 60_000);
  afterAll(async () => {
    resume();
    await api?.kill();
    await pool?.end();
    await pg?.stop();
  });

  it('answers get-upload-url 503 with the catalog string and /readyz 503 within their deadlines, naming no address', async () => {
    const dbUrl = await createDatabase(pg!.url, 'crisp_outage');
    pool = await openPostgres(dbUrl, { max: 2 });
    api = await startServe(path.join(root, 'api'), [
      '--storage',
      `s3://${BUCKET}/serve`,
      '--s3-endpoint',
      endpoint,
      '--db',
      dbUrl,
      '--workers',
      '0',
    ]);
    const { apiKey } = await createPgAccountStore(pool).addUser({ email: 'outage@example.com', credits: 10 });
    const ask = () =>
      postJson(api!.url, '/get-upload-url', apiKey, {
        data: { originalFileName: 'a.png', fileType: 'image/png', fileSize: 1000 },
      });
    expect((await ask()).status).toBe(200);
    expect((await httpGet(`${api.url}/readyz`)).status).toBe(200);
    stop();
    try {
      let started = Date.now();
      const ready = await httpGet(`${api.url}/readyz`);
      // The probe's one 3 s attempt, with room for a loaded machine (bounds a hang).
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(ready.status).toBe(503);
      expect(ready.bytes.toString()).toContain('the object storage is not reachable: no answer in time');
      started = Date.now();
      const refused = await ask();
      // 3 attempts of 10 s and two pauses, with room (bounds a hang).
      expect(Date.now() - started).toBeLessThan(60_000);
      expect([refused.status, refused.json]).toEqual([503, catalogMessage('storage-unavailable')]);
      for (const text of [ready.bytes.toString(), refused.text])
        expect(text).not.toMatch(/127\.0\.0\.1|localhost|ECONN|<\?xml/);
    } finally {
      resume();
    }
    expect((await ask()).status).toBe(200);
    expect((await httpGet(`${api.url}/readyz`)).status).toBe(200);
  }, 150_000);

  it('a task queued before the outage ends PROCESSED, charged once, by a worker that meets the bucket stopped', async () => {
    const dbUrl = await createDatabase(pg!.url, 'crisp_outage_worker');
    const workerPool = await openPostgres(dbUrl, { max: 2 });
    const storage = ['--storage', `s3://${BUCKET}/queued`, '--s3-endpoint', endpoint, '--db', dbUrl];
    const serve = await startServe(path.join(root, 'api2'), [...storage, '--workers', '0']);
    let worker: WorkerProcess | undefined;
    try {
      const { account, apiKey } = await createPgAccountStore(workerPool).addUser({
        email: 'q@example.com',
        credits: 10,
      });
      const png = await sharp({ create: { width: 16, height: 12, channels: 3, background: '#468' } })
        .png()
        .toBuffer();
      const started = await postForm(
        serve.url,
        apiKey,
        taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 'q.png', bytes: png }]),
      );
      expect(started.status, started.text).toBe(200);
      const { taskId, creditsToDeduct } = dataOf<{ taskId: string; creditsToDeduct: number }>(started);
      // The task waits in the queue; the bucket stops; only then does a worker come to take it.
      stop();
      try {
        worker = await startWorker([...storage, '--data', path.join(root, 'worker-q'), '--threads', '1']);
        // The worker met the outage staging this task's input (a failed attempt it tries again) before the bucket
        // comes back.
        const staging = new RegExp(`crisp worker: storage: .*(HEAD|GET) tasks/${taskId}/inputs/0: attempt 1 of`);
        await expect.poll(() => worker!.output(), { timeout: 120_000, interval: 200 }).toMatch(staging);
        expect(worker.output()).not.toMatch(/127\.0\.0\.1|<\?xml/);
      } finally {
        resume();
      }
      const done = await pollStatus(serve.url, apiKey, taskId, 120_000);
      expect(done.status).toBe('PROCESSED');
      expect(done.files[0]!.dimensions).toEqual({ width: 16, height: 12 });
      const { rows } = await workerPool.query<{ credits: number }>('SELECT credits FROM users WHERE user_id = $1', [
        account.userId,
      ]);
      expect(rows[0]!.credits).toBe(10 - creditsToDeduct);
      const charges = await workerPool.query('SELECT state, deducted FROM charges WHERE task_id = $1', [taskId]);
      expect(charges.rows).toEqual([{ state: 'settled', deducted: creditsToDeduct }]);
    } finally {
      resume();
      await worker?.kill();
      await serve.kill();
      await workerPool.end();
    }
  }, 240_000);
});
