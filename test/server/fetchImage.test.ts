/**
 * fetchImage against a real local HTTP server: caps, redirects, content check, private-address refusal; and
 * against a raw socket server: an answer that closes while its reader is held, one cut short, bodies left unread.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { createServer, type Server } from 'node:http';
import { createServer as createRawServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchImage } from '../../engine/service/inputs/fetchImage.js';
import { isPrivateAddress } from '../../engine/service/inputs/ipPolicy.js';
import { createTestGate } from '../helpers/testGate.js';
import { SET5 } from './helpers.js';

let server: Server;
let base: string;
let png: Buffer;
let dir: string;
/** Every fetch writes to its own file in a temp folder. */
let n = 0;
const target = () => path.join(dir, String(n++));

beforeAll(async () => {
  png = await readFile(path.join(SET5, 'bird.png'));
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-fetch-'));
  server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url === '/bird.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (url === '/redirect') return void res.writeHead(302, { location: '/bird.png' }).end();
    if (url.startsWith('/chain/')) {
      const n = Number(url.split('/')[2]);
      return void res.writeHead(301, { location: n > 0 ? `/chain/${n - 1}` : '/bird.png' }).end();
    }
    if (url === '/big') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(png);
      return void res.end(Buffer.alloc(2_000_000));
    }
    if (url === '/html')
      return void res.writeHead(200, { 'content-type': 'image/png' }).end('<html>not an image</html>');
    if (url === '/missing') return void res.writeHead(404).end();
    if (url === '/declared-huge') {
      // Declares 10 MB and sends a first chunk, then nothing: only the client can end this connection.
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(10_000_000) });
      return void res.write(png);
    }
    if (url === '/missing-endless') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return void res.write('not here, and this body never ends');
    }
    if (url === '/slow') return; // never answers
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const opts = { maxBytes: 1_000_000, timeoutMs: 2_000, maxRedirects: 3, allowPrivate: true };

describe('fetchImage', () => {
  it('fetches an image, following redirects up to the cap', async () => {
    const file = target();
    const img = await fetchImage(`${base}/redirect`, file, opts);
    expect(img.contentType).toBe('image/png');
    expect(img.size).toBe(png.length);
    expect((await readFile(file)).equals(png)).toBe(true);
    expect(img.originalFileName).toBe('bird.png');
    await expect(fetchImage(`${base}/chain/2`, target(), opts)).resolves.toMatchObject({ contentType: 'image/png' });
    await expect(fetchImage(`${base}/chain/3`, target(), opts)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/more than 3 redirects/),
    });
  });

  it('refuses oversize, non-image, failing and slow answers with clear 400s, leaving no file', async () => {
    const big = target();
    await expect(fetchImage(`${base}/big`, big, opts)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/larger than the limit of 1000000 bytes/),
    });
    expect(existsSync(big)).toBe(false);
    await expect(fetchImage(`${base}/html`, target(), opts)).rejects.toMatchObject({
      message: expect.stringMatching(/not a JPG, PNG or WEBP image/),
    });
    await expect(fetchImage(`${base}/missing`, target(), opts)).rejects.toMatchObject({
      message: expect.stringMatching(/answered HTTP 404/),
    });
    await expect(fetchImage(`${base}/slow`, target(), { ...opts, timeoutMs: 300 })).rejects.toMatchObject({
      message: expect.stringMatching(/within 300 ms/),
    });
    await expect(fetchImage('ftp://example.com/x.png', target(), opts)).rejects.toMatchObject({
      message: expect.stringMatching(/only http and https/),
    });
  });

  it('refuses loopback by IP literal and by name (checked at DNS lookup) unless allowPrivate', async () => {
    const strict = { ...opts, allowPrivate: false };
    const port = new URL(base).port;
    await expect(fetchImage(`${base}/bird.png`, target(), strict)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/private, loopback/),
    });
    await expect(fetchImage(`http://localhost:${port}/bird.png`, target(), strict)).rejects.toMatchObject({
      message: expect.stringMatching(/resolves to a private/),
    });
    await expect(fetchImage(`http://[::ffff:127.0.0.1]:${port}/bird.png`, target(), strict)).rejects.toMatchObject({
      message: expect.stringMatching(/private/),
    });
    await expect(fetchImage(`http://0x7f000001:${port}/bird.png`, target(), strict)).rejects.toMatchObject({
      message: expect.stringMatching(/private/),
    });
    await expect(fetchImage(`http://localhost:${port}/bird.png`, target(), opts)).resolves.toMatchObject({
      contentType: 'image/png',
    });
  });
});

describe('answers that close, end early or are never read to the end', () => {
  /** Each connection gets `answer(path)` written in one go, then FIN. */
  let raw: ReturnType<typeof createRawServer>;
  let rawBase: string;
  const finished: Promise<void>[] = [];
  const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);
  // Above every stream's high-water mark (64 KiB): the answer cannot fit in the reader's buffer.
  const body = Buffer.concat([PNG_MAGIC, Buffer.alloc(80_000 - PNG_MAGIC.length, 1)]);
  const head = (length: number) =>
    `HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;

  beforeAll(async () => {
    raw = createRawServer((socket: Socket) => {
      socket.on('error', () => undefined);
      let text = '';
      socket.on('data', (d: Buffer) => {
        if (text.includes('\r\n\r\n')) return;
        text += d.toString('latin1');
        if (!text.includes('\r\n\r\n')) return;
        finished.push(new Promise((resolve) => socket.once('finish', () => resolve())));
        const short = text.startsWith('GET /short ');
        socket.end(Buffer.concat([Buffer.from(head(body.length), 'latin1'), short ? body.subarray(0, 40_000) : body]));
      });
    });
    raw.listen(0, '127.0.0.1');
    await once(raw, 'listening');
    rawBase = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => raw.close(r));
  });

  it('Content-Length, the body and FIN while the reader is held: the image arrives whole (undici 7 threw here)', async () => {
    const gate = await createTestGate({ inProcess: true });
    try {
      await gate.hold('url-body');
      const file = target();
      const fetching = fetchImage(`${rawBase}/closing.png`, file, opts);
      await gate.reached('url-body');
      await finished[finished.length - 1];
      await gate.release('url-body');
      await expect(fetching).resolves.toMatchObject({ contentType: 'image/png', size: body.length });
      expect((await readFile(file)).equals(body)).toBe(true);
    } finally {
      await gate.close();
    }
  });

  it('a body cut short by FIN is refused, leaving no file', async () => {
    const file = target();
    await expect(fetchImage(`${rawBase}/short`, file, opts)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(
        /^Bad Request: could not fetch http:\/\/127\.0\.0\.1:\d+\/short: the download was interrupted$/,
      ),
    });
    expect(existsSync(file)).toBe(false);
  });

  it('a refused answer whose body never ends is not read on: its connection is closed', async () => {
    for (const [route, reason] of [
      ['/declared-huge', /larger than the limit/],
      ['/missing-endless', /answered HTTP 404/],
    ] as const) {
      const closed = new Promise<void>((resolve) => server.once('connection', (s: Socket) => s.once('close', resolve)));
      await expect(fetchImage(`${base}${route}`, target(), opts)).rejects.toMatchObject({
        message: expect.stringMatching(reason),
      });
      // The server's side of the socket closes because the client destroyed it (nothing else would end it).
      await closed;
    }
  });
});

describe('isPrivateAddress', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.16.0.1', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['100.128.0.1', false],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['255.255.255.255', true],
    ['8.8.8.8', false],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['fc12:3456::1', true],
    ['ff02::1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::127.0.0.1', true],
    ['2002:7f00:1::', true],
    ['2001:db8::1', true],
    ['2606:4700:4700::1111', false],
    ['not-an-ip', true],
  ])('%s → %s', (ip, blocked) => {
    expect(isPrivateAddress(ip)).toBe(blocked);
  });
});
