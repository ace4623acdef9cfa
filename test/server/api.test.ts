/**
 * The HTTP contract end to end: a real `crisp serve` app on loopback, real engine and models, spoken to
 * over HTTP. Every row of the spec's Errors table is reproduced (checked at the end), plus Crisp's
 * extensions (auth answers, isolation, limits), credit metering and concurrency. apiOnPostgres.test.ts runs
 * the same file on PostgreSQL with tasks as queued jobs (suiteStore.ts).
 */
import { readFile, rename, rm, mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SPEC_ERRORS, type Endpoint } from '../../engine/contract/index.js';
import { accountsFile } from '../../engine/service/accounts/accountStore.js';
import { createUrlSigner, loadOrCreateSecret } from '../../engine/service/security/urlSigner.js';
import { createDownloadLinks } from '../../engine/server/downloadLinks.js';
import {
  addUser,
  BASIC,
  dataOf,
  httpGet,
  httpPut,
  pollStatus,
  postForm,
  postJson,
  SET5,
  taskForm,
  type HttpAnswer,
  type TestServer,
} from './helpers.js';
import { idle, suite, suiteServer, stopSuiteStore } from './suiteStore.js';

let s: TestServer;
let base: string;
let alice: { key: string; userId: string };
let bob: { key: string; userId: string };
let bird: Buffer;
let butterfly: Buffer;
let images: Server;
let imagesBase: string;

/** Spec error rows observed in this file: "endpoint status body". */
const seen = new Set<string>();
function record(endpoint: Endpoint, a: HttpAnswer): HttpAnswer {
  seen.add(`${endpoint} ${a.status} ${a.text}`);
  return a;
}
function expectError(a: HttpAnswer, status: number, message: string): void {
  expect({ status: a.status, body: a.text, type: a.headers['content-type'] }).toEqual({
    status,
    body: JSON.stringify(message),
    type: 'application/json; charset=utf-8',
  });
}

const birdForm = (fields: Record<string, string> = BASIC) =>
  taskForm(fields, [{ name: 'file', fileName: 'bird.png', bytes: bird }]);

beforeAll(async () => {
  bird = await readFile(path.join(SET5, 'bird.png'));
  butterfly = await readFile(path.join(SET5, 'butterfly.png'));
  s = await suiteServer({ serverLimits: { rateLimitMax: 10_000, bodyLimit: 64 * 1024 } });
  base = s.url;
  alice = await addUser(s, 'alice@example.com', 100);
  bob = await addUser(s, 'bob@example.com', 100);
  images = createServer((req, res) => {
    if (req.url === '/bird.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(bird);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  imagesBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await s?.stop();
  await stopSuiteStore();
  images?.closeAllConnections();
  await new Promise((r) => images?.close(r));
});

describe('authentication', () => {
  it('answers a missing key with each endpoint spec 400 and an unknown key with 401 / 404 (start-task)', async () => {
    for (const ep of ['get-upload-url', 'complete-multipart-upload', 'get-task-status'] as const) {
      expectError(
        record(ep, await postJson(base, `/${ep}`, undefined, { data: {} })),
        400,
        'Bad Request: Missing User ID',
      );
      expectError(await postJson(base, `/${ep}`, 'crisp_unknown', { data: {} }), 401, 'Unauthorized');
    }
    expectError(record('start-task', await postForm(base, undefined, birdForm())), 400, 'Bad Request: Missing User');
    expectError(record('start-task', await postForm(base, 'crisp_unknown', birdForm())), 404, 'User not found');
    expectError(await postJson(base, '/get-account', undefined, {}), 400, 'Bad Request: Missing User ID');
  });

  it('get-account returns identity and balances', async () => {
    // Its own user: alice's balance moves with whichever of her tasks ran before (tests run in any order).
    const gina = await addUser(s, 'gina@example.com', 100, 3);
    const a = await postJson(base, '/get-account', gina.key, {});
    expect(a.status).toBe(200);
    expect(a.json).toEqual({
      status: 'success',
      data: { userId: gina.userId, email: 'gina@example.com', currentCredits: 100, currentExtraCredits: 3 },
    });
  });
});

describe('request hygiene', () => {
  it('answers malformed JSON, an empty body, a huge body, a wrong content type and unknown routes with clear 4xx strings', async () => {
    expectError(
      await postJson(base, '/get-task-status', alice.key, undefined, '{"data": {'),
      400,
      'Bad Request: the body is not valid JSON',
    );
    expectError(
      await postJson(base, '/get-task-status', alice.key, undefined, ''),
      400,
      'Bad Request: the body is empty; send a JSON object {"data": {…}}',
    );
    expectError(
      await postJson(base, '/get-task-status', alice.key, { data: { taskId: 'x'.repeat(70_000) } }),
      413,
      'Payload Too Large: the request body exceeds the limit of 65536 bytes',
    );
    expectError(await postJson(base, '/no-such-endpoint', alice.key, {}), 404, 'Not Found');
    expectError(
      await postJson(base, '/get-task-status', alice.key, { data: {} }),
      400,
      'Bad Request: taskId is required',
    );
    expectError(
      await postJson(base, '/get-task-status', alice.key, { data: { taskId: 'nope' } }),
      404,
      'Task not found',
    );
    const notForm = await postJson(base, '/start-task', alice.key, { data: BASIC });
    expectError(
      notForm,
      400,
      'Bad Request: start-task takes multipart/form-data (or application/x-www-form-urlencoded when it sends no file)',
    );
  });
});

describe('get-upload-url and complete-multipart-upload', () => {
  it('returns an upload session, and refuses bad bodies and users without credit', async () => {
    const ok = await postJson(base, '/get-upload-url', alice.key, {
      data: { fileSize: 1234, fileType: 'image/png', originalFileName: 'a/b.png' },
    });
    expect(ok.status).toBe(200);
    const session = dataOf<Record<string, unknown>>(ok);
    expect(Object.keys(session).sort()).toEqual(
      [
        'createdAt',
        'expiresAt',
        'fileName',
        'fileSize',
        'fileType',
        'originalFileName',
        'partSize',
        'partUrls',
        'path',
        'uploadId',
      ].sort(),
    );
    expect(session).toMatchObject({ fileSize: 1234, fileType: 'image/png', originalFileName: 'b.png' });
    expect((session.partUrls as { signedUrl: string }[])[0]?.signedUrl.startsWith(`${base}/uploads/`)).toBe(true);

    expectError(
      await postJson(base, '/get-upload-url', alice.key, {
        data: { fileSize: 0, fileType: 'image/png', originalFileName: 'x' },
      }),
      400,
      'Bad Request: fileSize 0 is not a positive integer',
    );
    const poor = await addUser(s, 'poor@example.com', 0);
    const r = record(
      'get-upload-url',
      await postJson(base, '/get-upload-url', poor.key, {
        data: { fileSize: 10, fileType: 'image/png', originalFileName: 'x.png' },
      }),
    );
    expectError(r, 402, 'Insufficient credits');
  });

  it('complete-multipart-upload: missing parameters is the spec 400; a foreign upload is not found', async () => {
    expectError(
      record(
        'complete-multipart-upload',
        await postJson(base, '/complete-multipart-upload', alice.key, { data: { uploadId: 'x' } }),
      ),
      400,
      'Bad Request: Missing required parameters',
    );
    const up = dataOf<{ uploadId: string; path: string; partUrls: { signedUrl: string }[] }>(
      await postJson(base, '/get-upload-url', alice.key, {
        data: { fileSize: bird.length, fileType: 'image/png', originalFileName: 'bird.png' },
      }),
    );
    const put = await httpPut(up.partUrls[0]!.signedUrl, bird);
    expect(put.status).toBe(200);
    const etag = put.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const body = { data: { uploadId: up.uploadId, key: up.path, parts: [{ PartNumber: 1, ETag: etag }] } };
    expectError(await postJson(base, '/complete-multipart-upload', bob.key, body), 404, 'Upload not found');
    const done = await postJson(base, '/complete-multipart-upload', alice.key, body);
    expect(done.json).toEqual({ status: 'success', data: { status: 'success' } });
    // Bob cannot use Alice's upload in a task either.
    const stolen = await postForm(base, bob.key, taskForm({ ...BASIC, files: JSON.stringify([{ path: up.path }]) }));
    expect(stolen.status).toBe(400);
    expect(stolen.json).toMatch(/^Bad Request: files\[0\] is not a completed upload of yours/);
  });
});

describe('start-task and get-task-status', () => {
  it('runs a task from a file part: success shapes, x-task-cost, deduction, download link owner-only', async () => {
    // A user of its own, so the balance checked at the end does not depend on which tests ran before.
    const alice = await addUser(s, 'hana@example.com', 100);
    const started = await postForm(base, alice.key, birdForm({ ...BASIC, scale: '4' }));
    expect(started.status).toBe(200);
    expect(started.headers['x-task-cost']).toBe('2');
    const data = dataOf<{ message: string; taskId: string; creditsToDeduct: number }>(started);
    expect(started.json).toEqual({
      status: 'success',
      data: { message: 'Task started', taskId: data.taskId, creditsToDeduct: 2 },
    });

    const done = await pollStatus(base, alice.key, data.taskId);
    expect(done).toMatchObject({ status: 'PROCESSED', progress: '100%', creditsDeducted: true, deductedCredits: 2 });
    const full = await postJson(base, '/get-task-status', alice.key, { data: { taskId: data.taskId } });
    expect(Object.keys(dataOf<object>(full)).sort()).toEqual(
      [
        'batchMode',
        'compression',
        'creditsDeducted',
        'deductedCredits',
        'files',
        'model',
        'progress',
        'saveImageAs',
        'scale',
        'status',
      ].sort(),
    );
    expect(dataOf<object>(full)).toMatchObject({
      model: BASIC.model,
      scale: 4,
      saveImageAs: 'png',
      compression: 0,
      batchMode: false,
    });
    const file = done.files[0]!;
    expect(file.dimensions).toEqual({ width: 288 * 4, height: 288 * 4 });

    const dl = await httpGet(file.downloadLink);
    expect(dl.status).toBe(200);
    expect(dl.headers['content-type']).toBe('image/png');
    expect(await sharp(dl.bytes).metadata()).toMatchObject({ width: 1152, height: 1152, format: 'png' });
    expect((await httpGet(file.downloadLink, { 'x-api-key': alice.key })).status).toBe(200);

    // Another user: the task and the file do not exist for them.
    expectError(
      await postJson(base, '/get-task-status', bob.key, { data: { taskId: data.taskId } }),
      404,
      'Task not found',
    );
    const foreign = await httpGet(file.downloadLink, { 'x-api-key': bob.key });
    expect([foreign.status, foreign.bytes.toString()]).toEqual([404, '"File not found"']);
    const tampered = file.downloadLink.replace(
      /signature=(.)/,
      (_m, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`,
    );
    const t = await httpGet(tampered);
    expect([t.status, t.bytes.toString()]).toEqual([403, '"Forbidden: the download link signature is invalid"']);
    const repointed = file.downloadLink.replace(`user=${alice.userId}`, `user=${bob.userId}`);
    expect((await httpGet(repointed)).status).toBe(403);
    const expiredLinks = createDownloadLinks(
      createUrlSigner(await loadOrCreateSecret(s.dataDir)),
      base,
      -2 * 3_600_000,
    );
    const expired = await httpGet(
      expiredLinks.link({ userId: alice.userId, taskId: data.taskId, fileName: file.fileName }, Date.now() - 1),
    );
    expect([expired.status, expired.bytes.toString()]).toEqual([403, '"Forbidden: this download link has expired"']);

    const acct = dataOf<{ currentCredits: number }>(await postJson(base, '/get-account', alice.key, {}));
    expect(acct.currentCredits).toBe(98);
  });

  it('accepts <index>.file parts as one batch task, in index order', async () => {
    const form = taskForm(BASIC, [
      { name: '1.file', fileName: 'butterfly.png', bytes: butterfly },
      { name: '0.file', fileName: 'bird.png', bytes: bird },
    ]);
    const started = await postForm(base, bob.key, form);
    expect(started.status).toBe(200);
    expect(started.headers['x-task-cost']).toBe('2');
    const done = await pollStatus(base, bob.key, dataOf<{ taskId: string }>(started).taskId);
    expect(done.status).toBe('PROCESSED');
    expect(done.files.map((f) => f.dimensions.width)).toEqual([576, 512]);
  });

  it('refuses invalid start-task forms with the contract messages', async () => {
    const cases: [Record<string, string>, boolean, string][] = [
      [{ ...BASIC, model: 'nope' }, true, "Bad Request: model 'nope' is not one of"],
      [{ ...BASIC, scale: '9' }, true, "Bad Request: scale '9' is not an integer from 1 to 8"],
      [BASIC, false, 'Bad Request: no image given: send exactly one of file, files or urls'],
      [{ ...BASIC, urls: 'not json' }, false, 'Bad Request: urls must be a JSON array'],
      [
        { ...BASIC, urls: JSON.stringify(['http://x/a.png']) },
        true,
        'Bad Request: send exactly one of file, files or urls, not several',
      ],
    ];
    for (const [fields, withFile, message] of cases) {
      const a = await postForm(base, alice.key, withFile ? birdForm(fields) : taskForm(fields));
      expect(a.status).toBe(400);
      expect(a.json).toEqual(expect.stringContaining(message));
    }
    const notImage = await postForm(
      base,
      alice.key,
      taskForm(BASIC, [{ name: 'file', fileName: 'x.png', bytes: Buffer.from('hello, not an image') }]),
    );
    expectError(notImage, 400, 'Bad Request: x.png is not a JPG, PNG or WEBP image');
  });

  it('50 concurrent polls of a finished task deduct exactly once', async () => {
    const carol = await addUser(s, 'carol@example.com', 10);
    const { taskId } = dataOf<{ taskId: string }>(await postForm(base, carol.key, birdForm()));
    await idle(s);
    const polls = await Promise.all(
      Array.from({ length: 50 }, () => postJson(base, '/get-task-status', carol.key, { data: { taskId } })),
    );
    expect(polls.every((p) => p.status === 200)).toBe(true);
    const results = polls.map((p) => dataOf<{ status: string; creditsDeducted: boolean; deductedCredits: number }>(p));
    expect(results.every((r) => r.status === 'PROCESSED' && r.creditsDeducted && r.deductedCredits === 1)).toBe(true);
    expect(dataOf<{ currentCredits: number }>(await postJson(base, '/get-account', carol.key, {})).currentCredits).toBe(
      9,
    );
  });

  it('two concurrent start-tasks with credit for one: exactly one 402', async () => {
    const dave = await addUser(s, 'dave@example.com', 1);
    const answers = await Promise.all([postForm(base, dave.key, birdForm()), postForm(base, dave.key, birdForm())]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402]);
    expectError(
      record(
        'start-task',
        answers.find((a) => a.status === 402)!,
      ),
      402,
      'Insufficient credits',
    );
    await idle(s);
  });

  it('spends regular credits before extra credits', async () => {
    const frank = await addUser(s, 'frank@example.com', 1, 5);
    const { taskId } = dataOf<{ taskId: string }>(await postForm(base, frank.key, birdForm({ ...BASIC, scale: '3' })));
    expect((await pollStatus(base, frank.key, taskId)).deductedCredits).toBe(2);
    expect(dataOf<object>(await postJson(base, '/get-account', frank.key, {}))).toMatchObject({
      currentCredits: 0,
      currentExtraCredits: 4,
    });
  });

  it('a failed task (private URL refused) deducts nothing and frees its reservation', async () => {
    const erin = await addUser(s, 'erin@example.com', 1);
    const started = await postForm(
      base,
      erin.key,
      taskForm({ ...BASIC, urls: JSON.stringify([`${imagesBase}/bird.png`]) }),
    );
    expect(started.status).toBe(200);
    const done = await pollStatus(base, erin.key, dataOf<{ taskId: string }>(started).taskId);
    expect(done).toMatchObject({ status: 'PROCESSING_FAILED', creditsDeducted: false, deductedCredits: 0, files: [] });
    expect(done.error).toBe(
      `could not fetch ${imagesBase}/bird.png: private, loopback and reserved addresses are refused`,
    );
    expect(await s.ledger.reservedFor(erin.userId)).toBe(0);
    expect(dataOf<object>(await postJson(base, '/get-account', erin.key, {}))).toMatchObject({ currentCredits: 1 });
    // The freed credit can be reserved again.
    expect((await postForm(base, erin.key, birdForm())).status).toBe(200);
    await idle(s);
  });

  it('never logs API keys or signed query strings', () => {
    const logs = s.logs();
    expect(logs.length).toBeGreaterThan(1000);
    expect(logs).not.toContain(alice.key);
    expect(logs).not.toContain(bob.key);
    expect(logs).not.toContain('signature=');
    expect(logs).not.toContain('crisp_unknown');
  });
});

describe('URL inputs with --allow-private-urls', () => {
  it('fetches from a local HTTP server', async () => {
    const open = await suiteServer({ allowPrivateUrls: true });
    try {
      const u = await addUser(open, 'urls@example.com', 5);
      const started = await postForm(
        open.url,
        u.key,
        taskForm({ ...BASIC, urls: JSON.stringify([`${imagesBase}/bird.png`]) }),
      );
      expect(started.status).toBe(200);
      const done = await pollStatus(open.url, u.key, dataOf<{ taskId: string }>(started).taskId);
      expect(done).toMatchObject({ status: 'PROCESSED', deductedCredits: 1 });
      expect(done.files[0]?.dimensions).toEqual({ width: 576, height: 576 });
    } finally {
      await open.stop();
    }
  });
});

describe('rate limit', () => {
  it('answers 429 "Too Many Requests" with Retry-After per key', async () => {
    const limited = await suiteServer({ serverLimits: { rateLimitMax: 3, rateLimitWindowMs: 60_000 } });
    try {
      const u = await addUser(limited, 'rl@example.com', 5);
      const other = await addUser(limited, 'rl2@example.com', 5);
      for (let i = 0; i < 3; i++) expect((await postJson(limited.url, '/get-account', u.key, {})).status).toBe(200);
      const a = await postJson(limited.url, '/get-account', u.key, {});
      expectError(a, 429, 'Too Many Requests');
      expect(Number(a.headers['retry-after'])).toBeGreaterThan(0);
      expect((await postJson(limited.url, '/get-account', other.key, {})).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});

describe('configured limits', () => {
  it('refuses a file part over --max-file-size (413) and more files than --max-files-per-task (400)', async () => {
    const small = await suiteServer({ engineLimits: { maxFileSize: 50_000, maxFilesPerTask: 2 } });
    try {
      const u = await addUser(small, 'limits@example.com', 50);
      const big = await postForm(small.url, u.key, birdForm());
      expect(big.status).toBe(413);
      expect(big.json).toMatch(/^Payload Too Large: /);
      const three = taskForm(
        BASIC,
        [0, 1, 2].map((i) => ({ name: `${i}.file`, fileName: `b${i}.png`, bytes: butterfly.subarray(0, 100) })),
      );
      expectError(await postForm(small.url, u.key, three), 400, 'Bad Request: 3 files in one task; the limit is 2');
      const urls = JSON.stringify(['http://a.example/1.png', 'http://a.example/2.png', 'http://a.example/3.png']);
      expectError(
        await postForm(small.url, u.key, taskForm({ ...BASIC, urls })),
        400,
        'Bad Request: 3 urls in one task; the limit is 2',
      );
      expectError(
        await postForm(
          small.url,
          u.key,
          taskForm(BASIC, [{ name: 'image', fileName: 'x.png', bytes: butterfly.subarray(0, 100) }]),
        ),
        400,
        "Bad Request: unexpected file part 'image': send file, <index>.file, files or urls",
      );
      expect(
        await postJson(small.url, '/get-upload-url', u.key, {
          data: { fileSize: 50_001, fileType: 'image/png', originalFileName: 'x.png' },
        }),
      ).toMatchObject({
        status: 413,
        json: 'Payload Too Large: fileSize 50001 exceeds the limit of 50000 bytes',
      });
    } finally {
      await small.stop();
    }
  });
});

// Breaks the files of the embedded store (accounts.json, the data directory's folders) under a running server.
describe.skipIf(suite.store === 'postgres')('server failures (storage made to fail)', () => {
  it('answers each endpoint spec 500 body', async () => {
    const f = await suiteServer();
    try {
      const u = await addUser(f, 'fail@example.com', 10);
      const uploads = path.join(f.dataDir, 'uploads');
      const tasks = path.join(f.dataDir, 'tasks');

      // complete-multipart-upload: the stored parts vanished from storage.
      const up = dataOf<{ uploadId: string; path: string; fileName: string; partUrls: { signedUrl: string }[] }>(
        await postJson(f.url, '/get-upload-url', u.key, {
          data: { fileSize: bird.length, fileType: 'image/png', originalFileName: 'bird.png' },
        }),
      );
      const put = await httpPut(up.partUrls[0]!.signedUrl, bird);
      await rm(path.join(uploads, up.uploadId, `${up.fileName}.partial`));
      const c = await postJson(f.url, '/complete-multipart-upload', u.key, {
        data: { uploadId: up.uploadId, key: up.path, parts: [{ PartNumber: 1, ETag: put.headers.etag }] },
      });
      expectError(record('complete-multipart-upload', c), 500, 'Internal Server Error: Failed to complete upload');

      // get-upload-url: the uploads folder is not a folder.
      await rename(uploads, `${uploads}.away`);
      await writeFile(uploads, 'not a directory');
      const g = await postJson(f.url, '/get-upload-url', u.key, {
        data: { fileSize: 10, fileType: 'image/png', originalFileName: 'x.png' },
      });
      expectError(record('get-upload-url', g), 500, 'Internal Server Error');
      await rm(uploads);
      await rename(`${uploads}.away`, uploads);

      // start-task: the tasks folder is not a folder.
      await rm(tasks, { recursive: true, force: true });
      await writeFile(tasks, 'not a directory');
      expectError(record('start-task', await postForm(f.url, u.key, birdForm())), 500, 'Error processing request');
      await rm(tasks);

      // get-task-status: the ledger cannot be written when the first PROCESSED poll settles.
      const { taskId } = dataOf<{ taskId: string }>(await postForm(f.url, u.key, birdForm()));
      await idle(f);
      const accounts = accountsFile(f.dataDir);
      await rename(accounts, `${accounts}.away`);
      await mkdir(accounts);
      expectError(
        record('get-task-status', await postJson(f.url, '/get-task-status', u.key, { data: { taskId } })),
        500,
        'Error getting data',
      );
      await rm(accounts, { recursive: true });
      await rename(`${accounts}.away`, accounts);
      // Nothing was deducted by the failed poll; the next one deducts once.
      expect(await pollStatus(f.url, u.key, taskId)).toMatchObject({ creditsDeducted: true, deductedCredits: 1 });
      expect(dataOf<object>(await postJson(f.url, '/get-account', u.key, {}))).toMatchObject({ currentCredits: 9 });
      expect(f.logs()).not.toContain(u.key);
    } finally {
      await f.stop();
    }
  });
});

// The spec Errors table: every row reproduced with its exact status and body.
// Checked after every test of this file, not as a test of its own: a test that reads what other tests left
// behind would depend on their order. When some were filtered out or failed, the table is not judged.
afterAll(({}, suite) => {
  const tests = suite.tasks.flatMap(function flat(t): { result?: { state?: string } }[] {
    return 'tasks' in t ? t.tasks.flatMap(flat) : [t];
  });
  if (!tests.every((t) => t.result?.state === 'pass')) return;
  const missing = SPEC_ERRORS.filter((r) => !seen.has(`${r.endpoint} ${r.status} ${JSON.stringify(r.message)}`));
  expect(missing, 'spec Errors rows no test reproduced').toEqual([]);
});
