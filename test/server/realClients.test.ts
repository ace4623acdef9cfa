/**
 * `crisp serve` as a real process, met the way real clients meet it (issue 27):
 * - a 99 MiB URL input is streamed to disk: the server's peak RSS (VmHWM) grows by far less than the body;
 * - an independent Python client posts a URL-only start-task with `requests.post(url, data={...,
 *   "urls": json.dumps([...])})`, i.e. `application/x-www-form-urlencoded` with quote_plus encoding — the
 *   bytes below are exactly what requests 2.x sends — and the task runs;
 * - an input whose name is 200 characters long (ASCII, and 200 two-byte characters) gives an output whose
 *   signed download link answers 200 with the image.
 */
import { createServer, type Server } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hugePng } from '../helpers/craftedImages.js';
import { BASIC, dataOf, httpGet, pollStatus, postForm, SET5, taskForm, tempDir, type StatusData } from './helpers.js';
import { addCliUser, startServe, type ServeProcess } from './serveProcess.js';

const MiB = 1024 * 1024;
const BIG = 99 * MiB;

let serve: ServeProcess;
let key: string;
let images: Server;
let imagesBase: string;
let bird: Buffer;
/** Bytes the image host has sent of /big.png (proves the whole body was fetched). */
let bigSent = 0;

beforeAll(async () => {
  bird = await sharp(path.join(SET5, 'bird.png')).resize(40, 40).png().toBuffer();
  const header = hugePng(40_000, 40_000);
  images = createServer((req, res) => {
    if (req.url?.startsWith('/bird.png')) return void res.writeHead(200, { 'content-type': 'image/png' }).end(bird);
    if (req.url === '/small-huge.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(header);
    if (req.url === '/big.png') {
      // A 1.6 GP PNG header and then zeros up to 99 MiB, generated chunk by chunk (never held here either).
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(BIG) });
      bigSent = 0;
      const zeros = Buffer.alloc(MiB);
      const pump = () => {
        while (bigSent < BIG) {
          const piece = bigSent === 0 ? header : zeros.subarray(0, Math.min(MiB, BIG - bigSent));
          bigSent += piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  imagesBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  const dataDir = await tempDir('crisp-clients-');
  key = await addCliUser(dataDir, 'clients@example.com', 50);
  serve = await startServe(dataDir, ['--allow-private-urls', '--threads', '1']);
}, 120_000);
afterAll(async () => {
  await serve?.kill();
  images?.closeAllConnections();
  await new Promise((r) => images?.close(r));
});

const urlTask = async (urls: string[]) => {
  const form = taskForm({ ...BASIC, urls: JSON.stringify(urls) });
  const started = await postForm(serve.url, key, form);
  expect(started.status, started.text).toBe(200);
  return dataOf<{ taskId: string }>(started).taskId;
};

describe('URL inputs stream to disk', () => {
  it('a 99 MiB URL input grows the server peak RSS by far less than its size', async () => {
    // Warm-up: the same path (fetch, header probe, refusal) on a small body, so the baseline includes it.
    const warm = await pollStatus(serve.url, key, await urlTask([`${imagesBase}/small-huge.png`]));
    expect(warm.status).toBe('PROCESSING_FAILED');
    const before = await serve.peakRss();

    const done = await pollStatus(serve.url, key, await urlTask([`${imagesBase}/big.png`]));
    expect(bigSent).toBe(BIG);
    // Fetched whole, then refused from its header (1.6 GP > the 2^30-pixel input cap) and charged nothing.
    expect(done.status).toBe('PROCESSING_FAILED');
    expect(done.error).toMatch(/pixels|MP/);
    expect(done.creditsDeducted).toBe(false);
    const growth = (await serve.peakRss()) - before;
    // Holding the body would grow the peak by at least its 99 MiB (104 MB). Streamed, the growth is chunks in
    // flight plus garbage not yet collected: ~30 MB on an idle machine, 55 MB measured with both cores busy
    // (the consumer slows, chunks live longer and reach the old generation before a major GC frees them).
    expect(growth).toBeLessThan(80 * 1_000_000);
  }, 120_000);
});

/** Python's urllib.parse.quote_plus, which requests uses for `data=`: only A–Z a–z 0–9 _ . - ~ stay as they are. */
const quotePlus = (s: string) =>
  encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');

/** One raw HTTP exchange on a fresh connection; resolves with the status and body text. */
function rawRequest(base: string, bytes: string): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port) }, () => socket.write(bytes));
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, end));
      if (end >= 0 && len && Buffer.byteLength(text.slice(end + 4)) >= Number(len[1])) {
        socket.destroy();
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(end + 4) });
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed without a whole answer: ${text.slice(0, 200)}`)));
  });
}

describe('a Python requests client', () => {
  it('starts a URL-only task with requests.post(data={..., "urls": json.dumps([...])})', async () => {
    const urls = [`${imagesBase}/bird.png`, `${imagesBase}/bird.png?copy=2`];
    // json.dumps puts ", " between list items; requests then url-encodes the dict in insertion order.
    const fields: [string, string][] = [
      ['model', BASIC.model],
      ['scale', '2'],
      ['saveImageAs', 'png'],
      ['enhanceFace', 'false'],
      ['urls', `[${urls.map((u) => JSON.stringify(u)).join(', ')}]`],
    ];
    const body = fields.map(([k, v]) => `${quotePlus(k)}=${quotePlus(v)}`).join('&');
    expect(body).toContain('urls=%5B%22http%3A%2F%2F127.0.0.1%3A');
    expect(body).toContain('%22%2C+%22');
    const u = new URL(serve.url);
    const request =
      `POST /start-task HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: python-requests/2.32.3\r\n` +
      `Accept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\nX-API-Key: ${key}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n${body}`;
    const answer = await rawRequest(serve.url, request);
    expect(answer.status, answer.body).toBe(200);
    const started = JSON.parse(answer.body) as { status: string; data: { taskId: string; creditsToDeduct: number } };
    expect(started.status).toBe('success');
    const done = await pollStatus(serve.url, key, started.data.taskId);
    expect(done.status).toBe('PROCESSED');
    expect(done.files.map((f) => f.dimensions)).toEqual([
      { width: 80, height: 80 },
      { width: 80, height: 80 },
    ]);
  }, 120_000);

  it('refuses a url-encoded start-task with neither urls nor files, with the reason', async () => {
    const body = `model=${BASIC.model}&scale=2&saveImageAs=png&enhanceFace=false`;
    const u = new URL(serve.url);
    const answer = await rawRequest(
      serve.url,
      `POST /start-task HTTP/1.1\r\nHost: ${u.host}\r\nX-API-Key: ${key}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatch(/^Bad Request: /);
  });
});

describe('every signed link downloads', () => {
  for (const [label, name] of [
    ['ASCII', `${'n'.repeat(196)}.png`],
    ['two-byte characters', `${'é'.repeat(196)}.png`],
  ] as const) {
    it(`an input named with 200 ${label} gives an output whose download link answers 200`, async () => {
      expect(name).toHaveLength(200);
      const started = await postForm(serve.url, key, taskForm(BASIC, [{ name: 'file', fileName: name, bytes: bird }]));
      expect(started.status, started.text).toBe(200);
      const done: StatusData = await pollStatus(serve.url, key, dataOf<{ taskId: string }>(started).taskId);
      expect(done.status).toBe('PROCESSED');
      const file = done.files[0]!;
      expect(Buffer.byteLength(file.fileName)).toBeLessThanOrEqual(200);
      expect(file.fileName).toMatch(/_digital-art-4x_x2\.png$/);
      const got = await httpGet(file.downloadLink);
      expect(got.status).toBe(200);
      const meta = await sharp(got.bytes).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', 80, 80]);
      expect(got.bytes.length).toBe(file.fileSize);
    }, 120_000);
  }
});
