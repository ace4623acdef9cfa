/**
 * `crisp serve` under abuse, as a real child process: no request costs the server more than its owner
 * can pay for, and no user starves the others. Memory is the server's own peak (VmHWM in /proc).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataOf, pollStatus, postForm, postJson, SET5, taskForm, tempDir, type StatusData } from './helpers.js';
import { BOUNDARY, heldRequest, multipartBody, rawPost, streamForm, trickle } from './rawHttp.js';
import { anyImagePoint, createTestGate, type TestGate } from '../helpers/testGate.js';
import { addCliUser, startServe, type ServeProcess } from './serveProcess.js';

const MiB = 1024 * 1024;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);
const FIELDS = { model: 'digital-art-4x', scale: '2', saveImageAs: 'png', enhanceFace: 'false' };
// Long enough that no honest request of these tests (50 MiB bodies on loopback, on a loaded machine) meets them;
// the two timeout tests take that long.
const REQUEST_TIMEOUT_MS = 8000;
const HEADERS_TIMEOUT_MS = 4000;
const PER_IP = 6;

let dataDir: string;
let serve: ServeProcess;
let hang: Server;
let hangUrl: string;
const keys: Record<string, string> = {};
let small: Buffer;
let tiles: Buffer[];
let gate: TestGate;

beforeAll(async () => {
  dataDir = await tempDir('crisp-abuse-');
  gate = await createTestGate();
  for (const [name, credits] of [
    ['zero', 0],
    ['one', 1],
    ['alice', 200],
    ['bob', 20],
    ['carol', 20],
    ['dave', 20],
  ] as const) {
    keys[name] = await addCliUser(dataDir, `${name}@example.com`, credits);
  }
  // A host that accepts URL fetches and never answers.
  hang = createServer(() => undefined);
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  hangUrl = `http://127.0.0.1:${(hang.address() as AddressInfo).port}`;
  serve = await startServe(
    dataDir,
    [
      '--allow-private-urls',
      '--request-timeout',
      String(REQUEST_TIMEOUT_MS),
      '--headers-timeout',
      String(HEADERS_TIMEOUT_MS),
      '--max-connections-per-ip',
      String(PER_IP),
      '--max-tasks-per-user',
      '2',
      '--url-fetch-timeout',
      '5000',
      '--url-fetch-budget',
      '3',
      '--max-open-uploads',
      '2',
      '--max-stored-bytes',
      String(30 * MiB),
      '--threads',
      '1',
    ],
    gate.env,
  );
  small = await sharp(path.join(SET5, 'bird.png')).resize(48, 48).png().toBuffer();
  tiles = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      sharp(path.join(SET5, 'baby.png'))
        .extract({ left: (i % 6) * 80, top: Math.floor(i / 6) * 80, width: 80, height: 80 })
        .png()
        .toBuffer(),
    ),
  );
}, 120_000);

afterAll(async () => {
  await serve?.kill();
  await gate?.close();
  hang?.closeAllConnections();
  hang?.close();
});

const incomingLeft = async () => (await readdir(path.join(dataDir, 'incoming')).catch(() => [] as string[])).length;

describe('pay before you load', () => {
  it('refuses a zero-credit user sending twenty 50 MB parts at the first part, with under 100 MB of server memory growth', async () => {
    // Warm the route so the baseline includes the code paths, not just start-up.
    expect(
      (await postForm(serve.url, keys.zero!, taskForm(FIELDS, [{ name: 'file', fileName: 'a.png', bytes: small }])))
        .status,
    ).toBe(402);
    const before = await serve.peakRss();
    const parts = Array.from({ length: 20 }, (_, i) => ({
      name: `${i}.file`,
      fileName: `${i}.png`,
      head: PNG_SIGNATURE,
      size: 50 * MiB,
    }));
    const r = await streamForm(serve.url, keys.zero!, FIELDS, parts);
    expect(r.status).toBe(402);
    expect(JSON.parse(r.text)).toBe('Insufficient credits');
    expect(r.sent).toBeLessThan(1000 * MiB);
    const grew = (await serve.peakRss()) - before;
    expect(grew).toBeLessThan(100 * MiB);
    expect(await incomingLeft()).toBe(0);
  });

  it('refuses a body whose declared length exceeds --max-request-bytes before reading it', async () => {
    const parts = Array.from({ length: 20 }, (_, i) => ({
      name: `${i}.file`,
      fileName: `${i}.png`,
      head: PNG_SIGNATURE,
      size: 50 * MiB,
    }));
    const r = await streamForm(serve.url, keys.bob!, FIELDS, parts, { declareLength: true });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text)).toMatch(
      /^Payload Too Large: the request body is \d+ bytes; the limit is 268435456 bytes of files$/,
    );
    expect(r.sent).toBeLessThan(50 * MiB);
  });

  it('streams a paid-for part to disk and refuses the next one it cannot pay for, keeping nothing', async () => {
    const before = await serve.peakRss();
    const parts = Array.from({ length: 20 }, (_, i) => ({
      name: `${i}.file`,
      fileName: `${i}.png`,
      head: PNG_SIGNATURE,
      size: 50 * MiB,
    }));
    const r = await streamForm(serve.url, keys.one!, { ...FIELDS, scale: '1' }, parts);
    expect(r.status).toBe(402);
    expect(r.sent).toBeGreaterThan(50 * MiB);
    expect((await serve.peakRss()) - before).toBeLessThan(100 * MiB);
    expect(await incomingLeft()).toBe(0);
  });

  it('refuses a part that is not an image at its first bytes', async () => {
    const r = await streamForm(serve.url, keys.bob!, FIELDS, [
      { name: 'file', fileName: 'notes.png', head: Buffer.from('just some text here'), size: 50 * MiB },
    ]);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toBe('Bad Request: notes.png is not a JPG, PNG or WEBP image');
    expect(r.sent).toBeLessThan(50 * MiB);
  });
});

describe('malformed multipart', () => {
  const headers = { 'x-api-key': '', 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
  it('answers a truncated body with 400 in the contract shape', async () => {
    const whole = multipartBody(FIELDS, [{ name: 'file', fileName: 'bird.png', bytes: small }]);
    const r = await rawPost(
      serve.url,
      '/start-task',
      { ...headers, 'x-api-key': keys.bob! },
      whole.subarray(0, whole.length - 200),
    );
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatch(
      /^Bad Request: the multipart\/form-data body is malformed or ends early \(.+\); send the whole form again$/,
    );
    expect(await incomingLeft()).toBe(0);
  });

  it('answers a multipart body without a boundary with 400', async () => {
    const r = await rawPost(
      serve.url,
      '/start-task',
      { 'x-api-key': keys.bob!, 'content-type': 'multipart/form-data' },
      Buffer.from('x'.repeat(100)),
    );
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatch(/^Bad Request: /);
  });
});

describe('time and connection bounds', () => {
  it('cuts a body trickling one byte per 100 ms at the request timeout', async () => {
    const body = multipartBody(FIELDS, [{ name: 'file', fileName: 'bird.png', bytes: small }]);
    const head = `POST /start-task HTTP/1.1\r\nHost: x\r\nX-API-Key: ${keys.bob}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const r = await trickle(serve.url, head, body, 100, 20_000);
    expect(r.closed).toBe(true);
    expect(r.bytesSent).toBeLessThan(body.length);
    expect(r.response).toMatch(/^HTTP\/1\.1 408/);
    // Cut at the configured timeout, checked every 250 ms: far from the 20 s the client would have gone on.
    expect(r.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + 3000);
  });

  it('cuts headers that never finish at the headers timeout', async () => {
    const r = await trickle(
      serve.url,
      'POST /start-task HTTP/1.1\r\nHost: x\r\n',
      Buffer.from('X-Slow: '.padEnd(10_000, 'a')),
      100,
      20_000,
    );
    expect(r.closed).toBe(true);
    expect(r.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 3000);
  });

  it(`closes the connection beyond ${PER_IP} from one IP address at once while its ${PER_IP} are busy`, async () => {
    const head = `POST /get-account HTTP/1.1\r\nHost: x\r\nX-API-Key: ${keys.bob}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n`;
    // From 127.0.0.2 so the test's own keep-alive connections (127.0.0.1) do not count. Each held request
    // has been read by the server (it answered 100 Continue) and, its key accepted, waits for its body:
    // busy, not idle, so none of them may give way to the extra connection.
    const held = await Promise.all(Array.from({ length: PER_IP }, () => heldRequest(serve.url, head, '127.0.0.2')));
    try {
      const extra = await trickle(serve.url, head, Buffer.alloc(100_000), 200, 20_000, '127.0.0.2');
      expect(extra.closed).toBe(true);
      expect(extra.response).toBe('');
      expect(held.filter((s) => s.destroyed)).toHaveLength(0);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

describe('fair scheduling', () => {
  const start = async (key: string, files: Buffer[]) => {
    const r = await postForm(
      serve.url,
      key,
      taskForm(
        FIELDS,
        files.map((bytes, i) => ({ name: `${i}.file`, fileName: `t${i}.png`, bytes })),
      ),
    );
    expect(r.status, r.text).toBe(200);
    return dataOf<{ taskId: string }>(r).taskId;
  };
  const status = async (key: string, taskId: string) =>
    dataOf<StatusData>(await postJson(serve.url, '/get-task-status', key, { data: { taskId } }));

  it("finishes user B's one-image task while user A's 30-image task runs; A's tasks are capped", async () => {
    // A's task is held (test gate) before its second image until B's task is queued, so B arrives while A
    // has 29 images to go whatever the machine's speed; then the order of the outputs shows who went first.
    await gate.hold(anyImagePoint(1));
    const a = await start(keys.alice!, tiles);
    await gate.reached(anyImagePoint(1));
    // A's second task is within the cap of 2, the third is refused until one ends.
    const a2 = await start(keys.alice!, [small]);
    const third = await postForm(
      serve.url,
      keys.alice!,
      taskForm(FIELDS, [{ name: 'file', fileName: 'x.png', bytes: small }]),
    );
    expect(third.status).toBe(429);
    expect(JSON.parse(third.text)).toBe(
      'Too Many Requests: you have 2 tasks waiting or running; the limit is 2. Start this one when one of them has finished',
    );

    const b = await start(keys.bob!, [small]);
    await gate.release(anyImagePoint(1));
    const bDone = await pollStatus(serve.url, keys.bob!, b, 60_000);
    expect(bDone.status).toBe('PROCESSED');
    expect(bDone.files[0]!.dimensions).toEqual({ width: 96, height: 96 });
    const aDone = await pollStatus(serve.url, keys.alice!, a, 240_000);
    expect(aDone.status).toBe('PROCESSED');
    expect(aDone.files).toHaveLength(30);
    // B went ahead of the images A still had queued: before B's output, A's first image, the held one, and
    // the one whose turn was already in line when B arrived (round robin by user); not the other 27.
    const bAt = bDone.files[0]!.createdAt;
    expect(aDone.files.filter((f) => f.createdAt < bAt).length).toBeLessThanOrEqual(3);
    expect((await pollStatus(serve.url, keys.alice!, a2)).status).toBe('PROCESSED');
  }, 300_000);

  it('runs other users while a URL task waits on a host that never answers, and charges the fetch budget', async () => {
    const urls = JSON.stringify([`${hangUrl}/a.png`, `${hangUrl}/b.png`]);
    const started = await postForm(serve.url, keys.carol!, taskForm({ ...FIELDS, urls }));
    expect(started.status, started.text).toBe(200);
    const c = dataOf<{ taskId: string }>(started).taskId;

    const d = await start(keys.dave!, [small]);
    const dDone = await pollStatus(serve.url, keys.dave!, d, 60_000);
    expect(dDone.status).toBe('PROCESSED');
    expect((await status(keys.carol!, c)).status).toBe('PROCESSING');

    const cDone = await pollStatus(serve.url, keys.carol!, c, 60_000);
    expect(cDone.status).toBe('PROCESSING_FAILED');
    expect(cDone.error).toMatch(/^could not fetch http:\/\/127\.0\.0\.1:\d+\/[ab]\.png: no answer within 5000 ms$/);
    expect(cDone.creditsDeducted).toBe(false);
    // The failed fetches were not free: 2 of the budget of 3 are spent.
    const again = await postForm(serve.url, keys.carol!, taskForm({ ...FIELDS, urls }));
    expect(again.status).toBe(429);
    expect(JSON.parse(again.text)).toMatch(
      /^Too Many Requests: this task asks for 2 URL fetches but only 1 of your 3 per 60 minutes are left; try again in \d+ min or upload the images instead$/,
    );
  }, 120_000);
});

describe('upload quotas', () => {
  const ask = (fileSize: number, key = keys.dave!) =>
    postJson(serve.url, '/get-upload-url', key, {
      data: { fileSize, fileType: 'image/png', originalFileName: 'big.png' },
    });

  it('refuses more open uploads and more stored bytes than the flags allow', async () => {
    expect((await ask(10 * MiB)).status).toBe(200);
    expect((await ask(10 * MiB)).status).toBe(200);
    const third = await ask(1 * MiB);
    expect(third.status).toBe(400);
    expect(JSON.parse(third.text)).toBe(
      'Bad Request: you have 2 unfinished uploads; the limit is 2. Complete them (complete-multipart-upload) or wait for them to expire',
    );
    // Another user: one 40 MiB upload is within --max-file-size but over the 30 MiB of --max-stored-bytes.
    const big = await ask(40 * MiB, keys.bob!);
    expect(big.status).toBe(400);
    expect(JSON.parse(big.text)).toMatch(
      /^Bad Request: this upload of 40 MiB would bring your stored files to 4\d MiB; the limit is 30 MiB\. Wait for older uploads and outputs to expire$/,
    );
    expect((await ask(5 * MiB, keys.bob!)).status).toBe(200);
  });
});
