/**
 * `--storage s3://bucket/prefix`: an API process (`--workers 0`) and a `crisp worker`, each with its own
 * local --data and no shared directory, on one PostgreSQL and one S3-compatible bucket (s3rver, an S3
 * emulator, in this process). Uploads go straight to the bucket with presigned part URLs; the worker
 * reads inputs from and writes outputs to the bucket; download links redirect to presigned GETs.
 */
import type { EventEmitter } from 'node:events';
import { mkdir, readdir, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import S3rver from 's3rver';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContractClient } from '../../app/remote/contractClient.js';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { ObjectStoreError, type ObjectStore } from '../../engine/service/storage/objectStore.js';
import { openObjectStore } from '../../engine/service/storage/openObjectStore.js';
import { S3UploadStore } from '../../engine/service/uploads/s3UploadStore.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { anyImagePoint, createTestGate, type TestGate } from '../helpers/testGate.js';
import { BASIC, dataOf, httpGet, httpPut, pollStatus, postForm, postJson, taskForm, tempDir } from './helpers.js';
import { crispCli, startServe, startWorker, type ServeProcess, type WorkerProcess } from './serveProcess.js';

const BUCKET = 'crisp-test';
const PREFIX = 'team/a';

let pgServer: TempPostgres;
let pool: Pool;
let dbUrl: string;
let root: string;
let s3: S3rver;
let s3Running = false;
/** Keys the bucket stored (PUT, copy or completed multipart), in order. */
const created: string[] = [];
let endpoint: string;
let objects: ObjectStore;
let api: ServeProcess;
let worker: WorkerProcess;
let second: WorkerProcess | undefined;
let apiData: string;
let workerData: string;
let png: Buffer;
let gate: TestGate;

async function user(email: string, credits: number): Promise<{ key: string; userId: string }> {
  const { account, apiKey } = await createPgAccountStore(pool).addUser({ email, credits });
  return { key: apiKey, userId: account.userId };
}

async function balance(userId: string): Promise<number> {
  const { rows } = await pool.query<{ credits: number }>('SELECT credits FROM users WHERE user_id = $1', [userId]);
  return rows[0]!.credits;
}

/** Files left under a directory (working copies must not pile up). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** The S3 emulator on `port` (0: any), recording every object it stores in `created`. */
async function startBucket(port: number): Promise<AddressInfo> {
  s3 = new S3rver({
    port,
    address: '127.0.0.1',
    silent: true,
    directory: path.join(root, 'bucket'),
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const addr = (await s3.run()) as AddressInfo;
  s3Running = true;
  // S3rver is a Koa app (an EventEmitter) that emits S3 event notifications; its typings leave that out.
  (s3 as unknown as EventEmitter).on(
    'event',
    (e: { Records: { eventName: string; s3: { object: { key: string } } }[] }) => {
      for (const r of e.Records)
        if (r.eventName.startsWith('ObjectCreated')) created.push(decodeURIComponent(r.s3.object.key));
    },
  );
  return addr;
}

/**
 * s3rver has no AbortMultipartUpload (it answers MethodNotAllowed): the bucket as a sweep sees a real one, its
 * abort confirmed, the upload's parts deleted.
 */
function abortingBucket(): ObjectStore & { aborted: string[] } {
  const aborted: string[] = [];
  return Object.assign(Object.create(objects) as ObjectStore, {
    aborted,
    abortMultipart: async (_key: string, s3UploadId: string) => void aborted.push(s3UploadId),
  });
}

beforeAll(async () => {
  root = await tempDir('crisp-s3-');
  await mkdir(path.join(root, 'bucket'));
  const addr = await startBucket(0);
  endpoint = `http://127.0.0.1:${addr.port}`;
  // The SDK's standard credential chain, as on a real deployment (s3rver's fixed credentials).
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' });
  objects = await openObjectStore({ bucket: BUCKET, prefix: `${PREFIX}/`, endpoint });

  gate = await createTestGate();
  pgServer = await startTempPostgres();
  dbUrl = await createDatabase(pgServer.url, 'crisp_s3');
  pool = await openPostgres(dbUrl, { max: 4 });
  apiData = path.join(root, 'api');
  workerData = path.join(root, 'worker');
  const storage = ['--storage', `s3://${BUCKET}/${PREFIX}`, '--s3-endpoint', endpoint, '--db', dbUrl];
  [api, worker] = await Promise.all([
    startServe(apiData, [...storage, '--workers', '0', '--lease', '2000']),
    startWorker([...storage, '--data', workerData, '--lease', '2000', '--threads', '1'], gate.env),
  ]);
  const raw = Buffer.alloc(24 * 20 * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 37 + ((i / 3) | 0) * 11) & 0xff;
  png = await sharp(raw, { raw: { width: 24, height: 20, channels: 3 } })
    .png()
    .toBuffer();
}, 120_000);

afterAll(async () => {
  worker?.child.kill('SIGCONT');
  await Promise.all([api?.kill(), worker?.kill(), second?.kill()]);
  objects?.close();
  await pool?.end();
  await pgServer?.stop();
  if (s3Running) await s3.close();
  if (root) await rm(root, { recursive: true, force: true });
  await gate?.close();
});

describe('crisp serve + crisp worker on --storage s3://bucket/prefix', () => {
  it('uploads go to the bucket, the worker runs the task from it, the download link redirects to the bucket', async () => {
    const u = await user('s3-upload@example.com', 100);
    const session = dataOf<{ uploadId: string; path: string; partUrls: { partNumber: number; signedUrl: string }[] }>(
      await postJson(api.url, '/get-upload-url', u.key, {
        data: { originalFileName: 'photo.png', fileType: 'image/png', fileSize: png.length },
      }),
    );
    expect(session.partUrls).toHaveLength(1);
    // The part URL is the bucket's own presigned UploadPart, not an API route.
    const partUrl = new URL(session.partUrls[0]!.signedUrl);
    expect(partUrl.origin).toBe(endpoint);
    expect(partUrl.pathname).toBe(`/${BUCKET}/${PREFIX}/${session.path}`);
    expect(partUrl.searchParams.get('partNumber')).toBe('1');
    expect(partUrl.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    const put = await httpPut(session.partUrls[0]!.signedUrl, png);
    expect(put.status).toBe(200);
    const etag = put.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);

    // A part list that misses the part is the contract's 400, before the bucket is asked.
    const missing = await postJson(api.url, '/complete-multipart-upload', u.key, {
      data: { uploadId: session.uploadId, key: session.path, parts: [] },
    });
    expect(missing.status).toBe(400);
    const done = await postJson(api.url, '/complete-multipart-upload', u.key, {
      data: { uploadId: session.uploadId, key: session.path, parts: [{ PartNumber: 1, ETag: etag }] },
    });
    expect(done.status).toBe(200);
    expect((await objects.head(session.path))?.size).toBe(png.length);

    const started = await postForm(
      api.url,
      u.key,
      taskForm({ ...BASIC, files: JSON.stringify([{ path: session.path }]) }),
    );
    expect(started.text).toContain('Task started');
    const { taskId, creditsToDeduct } = dataOf<{ taskId: string; creditsToDeduct: number }>(started);
    // Queued with its input in the bucket and nothing of it on the API's disk.
    expect(await objects.head(`tasks/${taskId}/inputs/0`)).toEqual({ size: png.length });

    const status = await pollStatus(api.url, u.key, taskId, 90_000);
    expect(status.status).toBe('PROCESSED');
    expect(status.files[0]!.dimensions).toEqual({ width: 48, height: 40 });
    expect(await balance(u.userId)).toBe(100 - creditsToDeduct);

    const link = status.files[0]!.downloadLink;
    expect(new URL(link).origin).toBe(api.url);
    const redirect = await httpGet(link);
    expect(redirect.status).toBe(302);
    const location = redirect.headers.location as string;
    expect(new URL(location).origin).toBe(endpoint);
    expect(new URL(location).pathname).toBe(
      `/${BUCKET}/${PREFIX}/tasks/${taskId}/outputs/${status.files[0]!.fileName}`,
    );
    const got = await httpGet(location);
    expect(got.status).toBe(200);
    expect(got.headers['content-disposition']).toContain(status.files[0]!.fileName);
    const meta = await sharp(got.bytes).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 48, 40]);

    // A tampered link is refused by the API before any redirect.
    const forgedUrl = new URL(link);
    forgedUrl.searchParams.set('user', 'someone-else');
    const forged = await httpGet(forgedUrl.toString());
    expect(forged.status).toBe(403);

    // Working copies are gone from both processes' disks once the task is done.
    expect((await filesUnder(path.join(apiData, 'tasks'))).length).toBe(0);
    await expect
      .poll(async () => (await filesUnder(path.join(workerData, 'tasks'))).length, { timeout: 10_000 })
      .toBe(0);
  }, 120_000);

  it('a file part sent to start-task runs the same way; the app client follows the redirect to the bytes', async () => {
    const u = await user('s3-form@example.com', 100);
    const started = await postForm(
      api.url,
      u.key,
      taskForm({ ...BASIC, scale: '3' }, [{ name: 'file', fileName: 'form.png', bytes: png }]),
    );
    expect(started.status).toBe(200);
    const { taskId } = dataOf<{ taskId: string }>(started);
    const status = await pollStatus(api.url, u.key, taskId, 90_000);
    expect(status.error ?? status.status).toBe('PROCESSED');
    const client = createContractClient({ baseUrl: api.url, apiKey: u.key });
    const { bytes } = await client.download(status.files[0]!.downloadLink);
    const meta = await sharp(bytes).metadata();
    expect([meta.width, meta.height]).toEqual([72, 60]);
    const keys = await objects.list(`tasks/${taskId}/`);
    expect(keys.sort()).toEqual([`tasks/${taskId}/inputs/0`, `tasks/${taskId}/outputs/${status.files[0]!.fileName}`]);
  }, 120_000);

  it('bytes that are not the declared image are refused at complete and removed from the bucket', async () => {
    const u = await user('s3-bad@example.com', 100);
    const junk = Buffer.from('this is not a png file at all, only text');
    const session = dataOf<{ uploadId: string; path: string; partUrls: { signedUrl: string }[] }>(
      await postJson(api.url, '/get-upload-url', u.key, {
        data: { originalFileName: 'x.png', fileType: 'image/png', fileSize: junk.length },
      }),
    );
    const put = await httpPut(session.partUrls[0]!.signedUrl, junk);
    const done = await postJson(api.url, '/complete-multipart-upload', u.key, {
      data: {
        uploadId: session.uploadId,
        key: session.path,
        parts: [{ PartNumber: 1, ETag: put.headers.etag as string }],
      },
    });
    expect(done.status).toBe(400);
    expect(done.text).toContain('the uploaded bytes are not a PNG image');
    expect(await objects.list(`uploads/${session.uploadId}/`)).toEqual([]);
    // And it cannot be used by a task.
    const started = await postForm(
      api.url,
      u.key,
      taskForm({ ...BASIC, files: JSON.stringify([{ path: session.path }]) }),
    );
    expect(started.status).toBe(400);
  }, 60_000);

  it('the open-uploads quota holds with sessions in the bucket (counted in PostgreSQL)', async () => {
    const u = await user('s3-quota@example.com', 100);
    const open = () =>
      postJson(api.url, '/get-upload-url', u.key, {
        data: { originalFileName: 'q.png', fileType: 'image/png', fileSize: png.length },
      });
    for (let i = 0; i < 10; i++) expect((await open()).status).toBe(200);
    const refused = await open();
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toBe(
      'Bad Request: you have 10 unfinished uploads; the limit is 10. Complete them (complete-multipart-upload) or wait for them to expire',
    );
    const { rows } = await pool.query(
      'SELECT count(*)::int AS n FROM upload_sessions WHERE user_id = $1 AND NOT completed',
      [u.userId],
    );
    expect(rows).toEqual([{ n: 10 }]);
  }, 60_000);

  // s3rver checks no SigV4 signature: here, that the URL signs the length; that a PUT of another length is then
  // refused is s3PartSignature.test.ts (a SigV4-checking front before s3rver, as AWS or MinIO check).
  it('each part URL signs its exact length', async () => {
    const u = await user('s3-part-size@example.com', 100);
    const session = dataOf<{ uploadId: string; path: string; partUrls: { signedUrl: string }[] }>(
      await postJson(api.url, '/get-upload-url', u.key, {
        data: { originalFileName: 'sized.png', fileType: 'image/png', fileSize: png.length },
      }),
    );
    const url = session.partUrls[0]!.signedUrl;
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;host');
    const big = dataOf<{ partSize: number; partUrls: { signedUrl: string }[] }>(
      await postJson(api.url, '/get-upload-url', u.key, {
        data: { originalFileName: 'big.png', fileType: 'image/png', fileSize: 12 * 1024 * 1024 + 5 },
      }),
    );
    // The SDK signs the length it was given; the test reads it back from the signing input's shape.
    expect(big.partUrls.map((p) => new URL(p.signedUrl).searchParams.get('X-Amz-SignedHeaders'))).toEqual([
      'content-length;host',
      'content-length;host',
      'content-length;host',
    ]);
    const put = await httpPut(url, png);
    expect(put.status).toBe(200);
    const done = await postJson(api.url, '/complete-multipart-upload', u.key, {
      data: {
        uploadId: session.uploadId,
        key: session.path,
        parts: [{ PartNumber: 1, ETag: put.headers.etag as string }],
      },
    });
    expect(done.status).toBe(200);
    expect((await objects.head(session.path))?.size).toBe(png.length);
  }, 60_000);

  it('a part list the bucket refuses is a 400 that says why (not a "{detail}" placeholder)', async () => {
    // s3rver checks no part list: the bucket's InvalidPart, as S3 answers it.
    const refusing: ObjectStore = Object.assign(Object.create(objects) as ObjectStore, {
      completeMultipart: () =>
        Promise.reject(new ObjectStoreError('InvalidPart', `${objects.description}: InvalidPart: One or more parts…`)),
    });
    const store = new S3UploadStore(refusing, { maxFileSize: 1 << 20, uploadTtlMs: 60_000, fileTtlMs: 60_000 });
    const caller = { userId: 'parts-user', email: 'parts@example.com' };
    const session = await store.create(caller, {
      data: { originalFileName: 'p.png', fileType: 'image/png', fileSize: png.length },
    });
    const parts = [{ PartNumber: 1, ETag: `"${'0'.repeat(32)}"` }];
    await expect(
      store.complete(caller, { data: { uploadId: session.uploadId, key: session.path, parts } }),
    ).rejects.toMatchObject({
      code: 'bad-request',
      message: 'Bad Request: a listed part was not uploaded, or its ETag does not match',
    });
    await objects.removePrefix(`uploads/${session.uploadId}/`); // not the sweep tests' to find
  });

  it('the upload sweep keeps a session whose abort the bucket refused, and a later sweep completes it', async () => {
    let t = Date.now();
    const limits = { maxFileSize: 1 << 20, uploadTtlMs: 60_000, fileTtlMs: 60_000 };
    const failing: ObjectStore = Object.assign(Object.create(objects) as ObjectStore, {
      abortMultipart: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:9000')),
    });
    const caller = { userId: 'sweep-user', email: 'sweep@example.com' };
    const bucket = abortingBucket();
    const store = new S3UploadStore(bucket, limits, () => t);
    const sessions = await Promise.all(
      [0, 1].map(() =>
        store.create(caller, { data: { originalFileName: 'a.png', fileType: 'image/png', fileSize: png.length } }),
      ),
    );
    // Parts in the bucket: what an abort that never happened would leave behind with no record.
    const s3UploadIds: string[] = [];
    for (const s of sessions) {
      expect((await httpPut(s.partUrls[0]!.signedUrl, png)).status).toBe(200);
      const stored = await objects.getJson<{ s3UploadId: string }>(`uploads/${s.uploadId}/session.json`);
      s3UploadIds.push(stored!.s3UploadId);
    }
    t += 61_000;
    expect(await new S3UploadStore(failing, limits, () => t).sweep()).toBe(0);
    for (const s of sessions)
      expect(await objects.list(`uploads/${s.uploadId}/`)).toEqual([`uploads/${s.uploadId}/session.json`]);
    expect(await store.sweep()).toBe(2);
    for (const s of sessions) expect(await objects.list(`uploads/${s.uploadId}/`)).toEqual([]);
    expect(bucket.aborted.sort()).toEqual(s3UploadIds.sort());
  });

  it('the upload sweep removes expired sessions and aborts their bucket uploads', async () => {
    let t = Date.now();
    const store = new S3UploadStore(
      abortingBucket(),
      { maxFileSize: 1 << 20, uploadTtlMs: 60_000, fileTtlMs: 60_000 },
      () => t,
    );
    const caller = { userId: 'sweep-user', email: 'sweep@example.com' };
    const session = await store.create(caller, {
      data: { originalFileName: 'a.png', fileType: 'image/png', fileSize: png.length },
    });
    expect(await objects.list(`uploads/${session.uploadId}/`)).toEqual([`uploads/${session.uploadId}/session.json`]);
    expect(await store.sweep()).toBe(0);
    t += 61_000;
    expect(await store.sweep()).toBe(1);
    expect(await objects.list(`uploads/${session.uploadId}/`)).toEqual([]);
  });

  it('a worker frozen past its lease loses the task to another; thawed, it writes nothing and the task is charged once', async () => {
    const u = await user('s3-lease@example.com', 100);
    const raw = Buffer.alloc(64 * 64 * 3);
    for (let i = 0; i < raw.length; i++) raw[i] = (i * 13 + ((i / 3) | 0) * 5) & 0xff;
    const big = await sharp(raw, { raw: { width: 64, height: 64, channels: 3 } })
      .png()
      .toBuffer();
    const files = Array.from({ length: 6 }, (_, i) => ({ name: 'file', fileName: `f${i}.png`, bytes: big }));
    await gate.hold(anyImagePoint(1));
    const started = await postForm(api.url, u.key, taskForm({ ...BASIC, scale: '2' }, files));
    const { taskId, creditsToDeduct } = dataOf<{ taskId: string; creditsToDeduct: number }>(started);
    // Freeze the only worker while it is running the task (SIGSTOP: alive, holding the lease, silent): the
    // test gate holds it before the task's second image, so it is surely mid-task whatever the machine's speed.
    expect(await gate.reached(anyImagePoint(1))).toBe(worker.child.pid);
    worker.child.kill('SIGSTOP');
    // The second worker must pass the gate; the frozen one, once thawed, goes on to its lease check.
    await gate.release(anyImagePoint(1));
    const lockedBy = async () =>
      (
        await pool.query<{ locked_by: string | null; attempts: number }>(
          'SELECT locked_by, attempts FROM tasks WHERE task_id = $1',
          [taskId],
        )
      ).rows[0]!;
    const frozenHolder = (await lockedBy()).locked_by;
    expect(frozenHolder).toContain(`:${worker.child.pid}:`);
    second = await startWorker([
      '--storage',
      `s3://${BUCKET}/${PREFIX}`,
      '--s3-endpoint',
      endpoint,
      '--db',
      dbUrl,
      '--data',
      path.join(root, 'worker2'),
      '--lease',
      '2000',
      '--threads',
      '1',
    ]);
    const done = await pollStatus(api.url, u.key, taskId, 110_000);
    expect(done.status).toBe('PROCESSED');
    expect((await lockedBy()).attempts).toBe(2);
    const outputs = new Map(done.files.map((f) => [f.fileName, f.fileSize]));
    const outputPuts = () => created.filter((k) => k.startsWith(`${PREFIX}/tasks/${taskId}/outputs/`)).length;
    expect(outputPuts()).toBe(6);
    // Thaw the first worker: it finds its lease gone and drops the task without touching the result.
    worker.child.kill('SIGCONT');
    const after = await pollStatus(api.url, u.key, taskId, 10_000);
    expect(after.status).toBe('PROCESSED');
    expect(new Map(after.files.map((f) => [f.fileName, f.fileSize]))).toEqual(outputs);
    expect(after.deductedCredits).toBe(creditsToDeduct);
    expect(await balance(u.userId)).toBe(100 - creditsToDeduct);
    const charges = await pool.query('SELECT state, cost, deducted FROM charges WHERE task_id = $1', [taskId]);
    expect(charges.rows).toEqual([{ state: 'settled', cost: creditsToDeduct, deducted: creditsToDeduct }]);
    for (const f of after.files) {
      const got = await httpGet((await httpGet(f.downloadLink)).headers.location as string);
      const meta = await sharp(got.bytes).metadata();
      expect([got.bytes.length, meta.width, meta.height]).toEqual([f.fileSize, 128, 128]);
    }
    // The thawed worker is still a worker: it takes the next task and finishes it.
    await second.kill();
    second = undefined;
    const next = await postForm(
      api.url,
      u.key,
      taskForm({ ...BASIC, scale: '2' }, [{ name: 'file', fileName: 'n.png', bytes: png }]),
    );
    const nextDone = await pollStatus(api.url, u.key, dataOf<{ taskId: string }>(next).taskId, 60_000);
    expect(nextDone.status).toBe('PROCESSED');
    // It runs one task at a time, so the stale one had left it before it took this one: and not one object of
    // the stale task was written by it (it asks the database before each image and before publishing).
    expect(outputPuts()).toBe(6);
  }, 180_000);

  it('refuses s3 storage without a database, and bad bucket names, in one sentence', async () => {
    const noDb = await crispCli(['serve', '--port', '0', '--storage', `s3://${BUCKET}/x`]);
    expect(noDb.code).not.toBe(0);
    expect(noDb.stderr).toContain('--storage s3://… needs --db');
    const badName = await crispCli(['worker', '--db', dbUrl, '--storage', 's3://Bad_Bucket/x']);
    expect(badName.code).not.toBe(0);
    expect(badName.stderr).toContain('is not a valid bucket name');
    expect(noDb.stderr + badName.stderr).not.toMatch(/\n\s+at /);
  });

  it('/readyz says when the bucket stops answering', async () => {
    expect((await httpGet(`${api.url}/readyz`)).status).toBe(200);
    await s3.close();
    s3Running = false;
    const r = await httpGet(`${api.url}/readyz`);
    expect(r.status).toBe(503);
    expect(r.bytes.toString()).toContain('the object storage is not reachable');
    // Unauthenticated: no address of the bucket, no socket error.
    expect(r.bytes.toString()).not.toMatch(/127\.0\.0\.1|ECONN|localhost/);
    // The bucket comes back on the same port and folder, for the tests that run after this one.
    await startBucket(Number(new URL(endpoint).port));
    await expect.poll(async () => (await httpGet(`${api.url}/readyz`)).status, { timeout: 30_000 }).toBe(200);
  }, 60_000);
});
