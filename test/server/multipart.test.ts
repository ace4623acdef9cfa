/**
 * The multipart upload flow over HTTP: a real ~12 MiB image in 3 parts, then a task from `files`, polled
 * to PROCESSED and downloaded; and every way an upload can be wrong gets a clear 4xx and stores nothing.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadSession } from '../../engine/contract/index.js';
import { createUrlSigner, loadOrCreateSecret } from '../../engine/service/security/urlSigner.js';
import { paddedPng } from '../helpers/craftedImages.js';
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
  startTestServer,
  taskForm,
  type TestServer,
} from './helpers.js';

/** The contract's upload session (engine/contract/schemas.ts). */
type Session = UploadSession;

let s: TestServer;
let user: { key: string; userId: string };
let big: Buffer;
const SIDE = 96;

beforeAll(async () => {
  // A ~12 MiB PNG with the pixels of a small image (a padding chunk decoders skip): three real parts to
  // upload, and an upscale that costs next to nothing.
  const small = await sharp(path.join(SET5, 'bird.png')).resize(SIDE, SIDE).png().toBuffer();
  big = paddedPng(small, 12 * 1048576);
  s = await startTestServer();
  user = await addUser(s, 'uploader@example.com', 50);
});
afterAll(async () => {
  await s?.stop();
});

async function session(bytes: Buffer, fileType = 'image/png'): Promise<Session> {
  const r = await postJson(s.url, '/get-upload-url', user.key, {
    data: { fileSize: bytes.length, fileType, originalFileName: 'noise.png' },
  });
  expect(r.status).toBe(200);
  return dataOf<Session>(r);
}

async function putAll(sess: Session, bytes: Buffer): Promise<{ PartNumber: number; ETag: string }[]> {
  return Promise.all(
    sess.partUrls.map(async (p) => {
      const chunk = bytes.subarray((p.partNumber - 1) * sess.partSize, p.partNumber * sess.partSize);
      const r = await httpPut(p.signedUrl, chunk);
      expect(r.status).toBe(200);
      return { PartNumber: p.partNumber, ETag: r.headers.etag as string };
    }),
  );
}

const complete = (sess: Session, parts: { PartNumber: number; ETag: string }[]) =>
  postJson(s.url, '/complete-multipart-upload', user.key, { data: { uploadId: sess.uploadId, key: sess.path, parts } });

const assembled = (sess: Session) => path.join(s.dataDir, 'uploads', sess.uploadId, sess.fileName);

describe('multipart upload', () => {
  it('uploads a ~12 MiB image in 3 parts, runs a task on it and downloads the result', async () => {
    expect(big.length).toBeGreaterThan(11 * 1048576);
    const sess = await session(big);
    expect(sess.partUrls).toHaveLength(3);
    const parts = await putAll(sess, big);
    expect((await complete(sess, parts)).json).toEqual({ status: 'success', data: { status: 'success' } });
    expect((await readFile(assembled(sess))).equals(big)).toBe(true);

    const started = await postForm(
      s.url,
      user.key,
      taskForm({
        ...BASIC,
        scale: '1',
        saveImageAs: 'jpg',
        files: JSON.stringify([{ path: sess.path, fileName: sess.fileName }]),
      }),
    );
    expect(started.status).toBe(200);
    const done = await pollStatus(s.url, user.key, dataOf<{ taskId: string }>(started).taskId, 200_000);
    expect(done.status).toBe('PROCESSED');
    const dl = await httpGet(done.files[0]!.downloadLink);
    expect(dl.status).toBe(200);
    expect(await sharp(dl.bytes).metadata()).toMatchObject({ width: SIDE, height: SIDE, format: 'jpeg' });
  });

  it('refuses tampered and expired part URLs (403) and stores nothing', async () => {
    const img = await readFile(path.join(SET5, 'bird.png'));
    const sess = await session(img);
    const url = sess.partUrls[0]!.signedUrl;
    const tampered = url.replace('/parts/1?', '/parts/2?');
    expect([(await httpPut(tampered, img)).status, (await httpPut(tampered, img)).json]).toEqual([
      403,
      'Forbidden: the upload URL signature is invalid',
    ]);
    const badSig = url.replace(/signature=(.)/, (_m, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`);
    expect((await httpPut(badSig, img)).json).toBe('Forbidden: the upload URL signature is invalid');
    // An expired URL, signed with the server's own secret so only the expiry is wrong.
    const signer = createUrlSigner(await loadOrCreateSecret(s.dataDir));
    const expired = s.url + signer.sign(`/uploads/${sess.uploadId}/parts/1`, {}, Date.now() - 1000);
    const e = await httpPut(expired, img);
    expect([e.status, e.json]).toEqual([403, 'Forbidden: this upload URL has expired']);
    expect(existsSync(path.join(s.dataDir, 'uploads', sess.uploadId, 'parts'))).toBe(false);
    const c = await complete(sess, [{ PartNumber: 1, ETag: '"0"' }]);
    expect([c.status, c.json]).toEqual([400, 'Bad Request: part 1 was not uploaded']);
  });

  it('a refused part PUT whose client keeps sending gets its 403, then the server closes the connection', async () => {
    const img = await readFile(path.join(SET5, 'bird.png'));
    const sess = await session(img);
    const signed = new URL(
      sess.partUrls[0]!.signedUrl.replace(/signature=(.)/, (_m, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`),
    );
    // allowHalfOpen: this client does not stop at the server's FIN, it keeps sending until the socket is gone.
    const socket = net.connect({ port: Number(signed.port), host: signed.hostname, allowHalfOpen: true });
    await once(socket, 'connect');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.on('error', () => undefined); // the server's close may reach a write as EPIPE / ECONNRESET
    let closed = false;
    const ended = new Promise<void>((resolve) =>
      socket.once('close', () => {
        closed = true;
        resolve();
      }),
    );
    // A body that would never end (a terabyte declared): only the server can end this connection.
    socket.write(
      `PUT ${signed.pathname}${signed.search} HTTP/1.1\r\nHost: ${signed.host}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${10 ** 12}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024);
    while (!closed) {
      // Once the server is gone a write fails (EPIPE): 'drain' then never comes, 'close' does.
      if (!socket.write(chunk)) await Promise.race([once(socket, 'drain').catch(() => undefined), ended]);
      else await new Promise((r) => setImmediate(r));
    }
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('Forbidden: the upload URL signature is invalid');
    expect(existsSync(path.join(s.dataDir, 'uploads', sess.uploadId, 'parts'))).toBe(false);
  });

  it('refuses a wrong ETag, a missing part, a size mismatch and non-image bytes', async () => {
    const sess = await session(big);
    const parts = await putAll(sess, big);
    const wrong = await complete(
      sess,
      parts.map((p) => (p.PartNumber === 2 ? { ...p, ETag: '"00000000000000000000000000000000"' } : p)),
    );
    expect([wrong.status, wrong.json]).toEqual([400, 'Bad Request: ETag of part 2 does not match']);
    const missing = await complete(sess, parts.slice(0, 2));
    expect([missing.status, missing.json]).toEqual([400, 'Bad Request: part 3 is missing from parts']);
    expect(existsSync(assembled(sess))).toBe(false);

    const short = await session(big);
    const p1 = short.partUrls[0]!.signedUrl;
    const tooSmall = await httpPut(p1, big.subarray(0, 1000));
    expect([tooSmall.status, tooSmall.json]).toEqual([
      400,
      `Bad Request: part 1 has 1000 bytes; expected ${short.partSize}`,
    ]);
    const tooBig = await httpPut(short.partUrls[2]!.signedUrl, big.subarray(0, short.partSize));
    expect(tooBig.status).toBe(400);
    expect(tooBig.json).toMatch(/^Bad Request: part 3 is larger than \d+ bytes$/);
    expect(await readdir(path.join(s.dataDir, 'uploads', short.uploadId, 'parts')).catch(() => [])).toEqual([]);

    const text = Buffer.from('this is not an image at all, just text pretending to be a png');
    const fake = await session(text);
    const fakeParts = await putAll(fake, text);
    const notImage = await complete(fake, fakeParts);
    expect([notImage.status, notImage.json]).toEqual([400, 'Bad Request: the uploaded bytes are not a PNG image']);
    expect(existsSync(assembled(fake))).toBe(false);
    const use = await postForm(s.url, user.key, taskForm({ ...BASIC, files: JSON.stringify([{ path: fake.path }]) }));
    expect(use.status).toBe(400);
    expect(use.json).toMatch(/^Bad Request: files\[0\] is not a completed upload of yours/);
  });
});
