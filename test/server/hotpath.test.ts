/**
 * What the hot-path optimisations (issue 16) must not break, over real HTTP against a real server:
 * exactly-once deduction under 64 concurrent first polls, status answers that follow the task (never a
 * stale cached body), multipart parts written in place yet refused at complete when altered, reordered
 * or truncated, and logs: one line per request at most, none for successful polls at info, errors with
 * a request id, no API key and no signature anywhere.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errors, type UploadSession } from '../../engine/contract/index.js';
import {
  addUser,
  BASIC,
  dataOf,
  httpGet,
  httpPut,
  postForm,
  postJson,
  startTestServer,
  taskForm,
  type StatusData,
  type TestServer,
} from './helpers.js';

/** The contract's upload session (engine/contract/schemas.ts). */
type Session = UploadSession;

let s: TestServer;
let user: { key: string; userId: string };
let tiny: Buffer;
/** get-task-status throws once for this task id (an unexpected failure, for the error log line). */
let failNextStatusOf = '';

beforeAll(async () => {
  tiny = await sharp({ create: { width: 24, height: 20, channels: 3, background: '#4a8' } })
    .png()
    .toBuffer();
  s = await startTestServer(
    { serverLimits: { rateLimitMax: 100_000 } },
    {
      engine: (engine) => ({
        ...engine,
        getTaskStatus: async (caller, body) => {
          const id = (body as { data?: { taskId?: string } }).data?.taskId;
          if (id && id === failNextStatusOf) {
            failNextStatusOf = '';
            throw new Error('disk on fire');
          }
          return engine.getTaskStatus(caller, body);
        },
      }),
    },
  );
  user = await addUser(s, 'hot@example.com', 1000);
});
afterAll(async () => {
  await s?.stop();
});

const status = (taskId: string, key = user.key) => postJson(s.url, '/get-task-status', key, { data: { taskId } });
const credits = async (key: string) =>
  dataOf<{ currentCredits: number }>(await postJson(s.url, '/get-account', key, {})).currentCredits;

async function startTiny(key: string): Promise<{ taskId: string; creditsToDeduct: number }> {
  const r = await postForm(
    s.url,
    key,
    taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 'tiny.png', bytes: tiny }]),
  );
  expect(r.status).toBe(200);
  return dataOf<{ taskId: string; creditsToDeduct: number }>(r);
}

describe('get-task-status', () => {
  it('64 concurrent first polls after PROCESSED deduct exactly once, and every answer says so', async () => {
    const dana = await addUser(s, 'dana@example.com', 10);
    const { taskId, creditsToDeduct } = await startTiny(dana.key);
    expect(creditsToDeduct).toBeGreaterThan(0);
    await s.engine.idle();
    for (let round = 0; round < 2; round++) {
      const polls = await Promise.all(Array.from({ length: 64 }, () => status(taskId, dana.key)));
      expect(polls.map((p) => p.status)).toEqual(Array(64).fill(200));
      const bodies = new Set(polls.map((p) => p.text));
      expect(bodies.size).toBe(1);
      expect(dataOf<StatusData>(polls[0]!)).toMatchObject({
        status: 'PROCESSED',
        creditsDeducted: true,
        deductedCredits: creditsToDeduct,
      });
      expect(await credits(dana.key)).toBe(10 - creditsToDeduct);
      expect(await s.ledger.reservedFor(dana.userId)).toBe(0);
    }
  });

  it('follows the task through its states: never a cached body from an earlier state', async () => {
    const { taskId, creditsToDeduct } = await startTiny(user.key);
    const first = await status(taskId);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    const early = dataOf<StatusData>(first);
    await s.engine.idle();
    const done = dataOf<StatusData>(await status(taskId));
    expect(done).toMatchObject({
      status: 'PROCESSED',
      progress: '100%',
      creditsDeducted: true,
      deductedCredits: creditsToDeduct,
    });
    expect(done.files).toHaveLength(1);
    expect(done.files[0]!.dimensions).toEqual({ width: 24, height: 20 });
    if (early.status !== 'PROCESSED') {
      // The poll before completion saw the running task, and nothing of it survived into this answer.
      expect(early).toMatchObject({ files: [], creditsDeducted: false, deductedCredits: 0 });
    }
    // The link in the cached answer works, and the answer equals what the engine builds afresh.
    const dl = await httpGet(done.files[0]!.downloadLink);
    expect(dl.status).toBe(200);
    expect(await sharp(dl.bytes).metadata()).toMatchObject({ width: 24, height: 20, format: 'png' });
    const record = await s.engine.getTaskRecord({ userId: user.userId, email: 'hot@example.com' }, taskId);
    expect(done.files).toEqual(record.files);
  });

  it('another user polling the same task id gets the contract 404, even while its status is cached', async () => {
    const other = await addUser(s, 'other@example.com', 5);
    const { taskId } = await startTiny(user.key);
    await s.engine.idle();
    expect((await status(taskId)).status).toBe(200);
    const foreign = await status(taskId, other.key);
    expect([foreign.status, foreign.json]).toEqual([errors.taskNotFound().status, errors.taskNotFound().message]);
  });
});

describe('multipart upload written in place', () => {
  // PNG magic + random bytes: complete checks the magic, not the pixels. 12 MiB = parts of 5, 5 and 2 MiB.
  const file = randomBytes(12 * 1024 * 1024);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(file);
  const md5 = (b: Uint8Array) => `"${createHash('md5').update(b).digest('hex')}"`;

  async function session(): Promise<Session> {
    const r = await postJson(s.url, '/get-upload-url', user.key, {
      data: { fileSize: file.length, fileType: 'image/png', originalFileName: 'x.png' },
    });
    expect(r.status).toBe(200);
    const sess = dataOf<Session>(r);
    expect(sess.partUrls).toHaveLength(3);
    return sess;
  }
  const partOf = (sess: Session, n: number) => file.subarray((n - 1) * sess.partSize, n * sess.partSize);
  /** The client's own list: the MD5 of what it meant to send for each part. */
  const ownList = (sess: Session) =>
    sess.partUrls.map((p) => ({ PartNumber: p.partNumber, ETag: md5(partOf(sess, p.partNumber)) }));
  const complete = (sess: Session, parts: { PartNumber: number; ETag: string }[]) =>
    postJson(s.url, '/complete-multipart-upload', user.key, {
      data: { uploadId: sess.uploadId, key: sess.path, parts },
    });
  const put = async (sess: Session, n: number, bytes: Uint8Array) => httpPut(sess.partUrls[n - 1]!.signedUrl, bytes);
  const assembled = (sess: Session) => path.join(s.dataDir, 'uploads', sess.uploadId, sess.fileName);

  it('assembles the exact bytes, with parts sent out of order and concurrently', async () => {
    const sess = await session();
    const answers = await Promise.all([3, 1, 2].map((n) => put(sess, n, partOf(sess, n))));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.headers.etag)).toEqual([3, 1, 2].map((n) => md5(partOf(sess, n))));
    expect((await complete(sess, ownList(sess))).json).toEqual({ status: 'success', data: { status: 'success' } });
    expect((await readFile(assembled(sess))).equals(file)).toBe(true);
  });

  it('refuses an altered part body at complete with the contract error', async () => {
    const sess = await session();
    const altered = Buffer.from(partOf(sess, 2));
    altered[12345] = altered[12345]! ^ 0xff;
    for (const n of [1, 3]) expect((await put(sess, n, partOf(sess, n))).status).toBe(200);
    expect((await put(sess, 2, altered)).status).toBe(200);
    const c = await complete(sess, ownList(sess));
    const e = errors.badRequest('ETag of part 2 does not match');
    expect([c.status, c.json]).toEqual([e.status, e.message]);
  });

  it('refuses reordered part bodies at complete, whichever list the client sends', async () => {
    const sess = await session();
    const r1 = await put(sess, 1, partOf(sess, 2));
    const r2 = await put(sess, 2, partOf(sess, 1));
    expect((await put(sess, 3, partOf(sess, 3))).status).toBe(200);
    const c = await complete(sess, ownList(sess));
    expect([c.status, c.json]).toEqual([400, errors.badRequest('ETag of part 1 does not match').message]);
    // The ETags the server returned, listed under the parts they belong to in the client's order.
    const swapped = [
      { PartNumber: 1, ETag: String(r2.headers.etag) },
      { PartNumber: 2, ETag: String(r1.headers.etag) },
      { PartNumber: 3, ETag: md5(partOf(sess, 3)) },
    ];
    const c2 = await complete(sess, swapped);
    expect([c2.status, c2.json]).toEqual([400, errors.badRequest('ETag of part 1 does not match').message]);
  });

  it('refuses a truncated part, and a part whose retry was truncated after it had succeeded', async () => {
    const sess = await session();
    for (const n of [1, 2, 3]) expect((await put(sess, n, partOf(sess, n))).status).toBe(200);
    // A retry of part 2 that carries too few bytes overwrote part of its region: part 2 is no longer uploaded.
    const short = await put(sess, 2, partOf(sess, 2).subarray(0, 1000));
    expect([short.status, short.json]).toEqual([
      400,
      errors.badRequest(`part 2 has 1000 bytes; expected ${sess.partSize}`).message,
    ]);
    const c = await complete(sess, ownList(sess));
    expect([c.status, c.json]).toEqual([400, errors.badRequest('part 2 was not uploaded').message]);
    // Sending it again whole makes the upload complete, byte for byte.
    expect((await put(sess, 2, partOf(sess, 2))).status).toBe(200);
    expect((await complete(sess, ownList(sess))).status).toBe(200);
    expect((await readFile(assembled(sess))).equals(file)).toBe(true);
  });

  it('a retry is not held up by an earlier attempt of the same part whose client went silent', async () => {
    const sess = await session();
    const stalled = new AbortController();
    let release = () => {};
    const half = partOf(sess, 1).subarray(0, 1024 * 1024);
    const hanging = request(sess.partUrls[0]!.signedUrl, {
      method: 'PUT',
      headers: { 'content-length': String(sess.partSize) },
      signal: stalled.signal,
      body: Readable.from(
        (async function* () {
          yield half;
          await new Promise<void>((r) => (release = r)); // the client stops sending, the socket stays open
        })(),
      ),
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    for (const n of [1, 2, 3]) expect((await put(sess, n, partOf(sess, n))).status).toBe(200);
    expect((await complete(sess, ownList(sess))).status).toBe(200);
    expect((await readFile(assembled(sess))).equals(file)).toBe(true);
    stalled.abort();
    release();
    await hanging;
  });

  it('an oversized part never spills into the next part’s region', async () => {
    const sess = await session();
    expect((await put(sess, 2, partOf(sess, 2))).status).toBe(200);
    const tooBig = Buffer.concat([partOf(sess, 1), Buffer.alloc(70_000, 0xab)]);
    const r = await put(sess, 1, tooBig);
    expect([r.status, r.json]).toEqual([
      400,
      errors.badRequest(`part 1 is larger than ${sess.partSize} bytes`).message,
    ]);
    for (const n of [1, 3]) expect((await put(sess, n, partOf(sess, n))).status).toBe(200);
    expect((await complete(sess, ownList(sess))).status).toBe(200);
    expect((await readFile(assembled(sess))).equals(file)).toBe(true);
  });
});

describe('logs', () => {
  interface Line {
    level: number;
    reqId?: string;
    route?: string;
    status?: number;
    code?: string;
    msg?: string;
    user?: string;
    err?: { stack?: string };
  }
  const linesSince = (mark: number): Line[] =>
    s
      .logs()
      .slice(mark)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);

  it('one line per request at most; successful polls only at debug; refusals and failures with a request id', async () => {
    const { taskId } = await startTiny(user.key);
    await s.engine.idle();
    await status(taskId);

    let mark = s.logs().length;
    for (let i = 0; i < 20; i++) expect((await status(taskId)).status).toBe(200);
    expect(linesSince(mark)).toEqual([]);

    mark = s.logs().length;
    const refused = await postJson(s.url, '/get-task-status', 'crisp_not-a-key', { data: { taskId } });
    expect(refused.status).toBe(401);
    failNextStatusOf = taskId;
    const failed = await status(taskId);
    expect([failed.status, failed.json]).toEqual([
      errors.serverFailure('get-task-status').status,
      errors.serverFailure('get-task-status').message,
    ]);
    expect((await postJson(s.url, '/get-account', user.key, {})).status).toBe(200);
    const lines = linesSince(mark);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      level: 30,
      route: '/get-task-status',
      status: 401,
      code: errors.unauthorized().code,
      msg: errors.unauthorized().message,
    });
    expect(lines[0]!.user).toBeUndefined();
    expect(lines[1]).toMatchObject({ level: 50, route: '/get-task-status', status: 500, user: user.userId });
    expect(lines[1]!.err?.stack).toContain('disk on fire');
    expect(lines[2]).toMatchObject({ level: 30, route: '/get-account', status: 200, user: user.userId });
    for (const l of lines) expect(l.reqId).toMatch(/\S/);
    expect(new Set(lines.map((l) => l.reqId)).size).toBe(3);

    s.app.log.level = 'debug';
    try {
      mark = s.logs().length;
      await status(taskId);
      expect(linesSince(mark)).toMatchObject([
        { level: 20, route: '/get-task-status', status: 200, user: user.userId },
      ]);
    } finally {
      s.app.log.level = 'info';
    }
  });

  it('contain no API key and no signature, whatever was requested', async () => {
    s.app.log.level = 'debug';
    try {
      const { taskId } = await startTiny(user.key);
      await s.engine.idle();
      const done = dataOf<StatusData>(await status(taskId));
      const link = done.files[0]!.downloadLink;
      expect((await httpGet(link, { 'x-api-key': user.key })).status).toBe(200);
      expect((await httpGet(link.replace(/signature=./, 'signature=Z'))).status).toBe(403);
      const sess = dataOf<Session>(
        await postJson(s.url, '/get-upload-url', user.key, {
          data: { fileSize: tiny.length, fileType: 'image/png', originalFileName: 't.png' },
        }),
      );
      expect((await httpPut(sess.partUrls[0]!.signedUrl, tiny)).status).toBe(200);
      expect((await httpPut(`${sess.partUrls[0]!.signedUrl}x`, tiny)).status).toBe(403);
      await postJson(s.url, '/get-task-status', `${user.key}x`, { data: { taskId } });

      const logs = s.logs();
      const signatures = [link, sess.partUrls[0]!.signedUrl].map((u) => new URL(u).searchParams.get('signature')!);
      expect(logs).not.toContain(user.key);
      expect(logs).not.toContain('signature=');
      for (const sig of signatures) expect(logs).not.toContain(sig);
      expect(logs).toContain('/downloads/:taskId/:fileName');
    } finally {
      s.app.log.level = 'info';
    }
  });
});
