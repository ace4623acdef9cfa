/** fetchImage against a real local HTTP server: caps, redirects, content check, private-address refusal. */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchImage } from '../../engine/service/inputs/fetchImage.js';
import { isPrivateAddress } from '../../engine/service/inputs/ipPolicy.js';
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
