/**
 * Quotas and expiry with the server's clock advanced (an in-process `crisp serve` over real HTTP, its
 * engine clock injected): expired uploads and outputs are deleted from disk by the sweep, and what they
 * held stops counting against the user's quota.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../engine/service/limits.js';
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

let clock = Date.now();
let s: TestServer;
let user: { key: string; userId: string };
let png: Buffer;

interface Session {
  uploadId: string;
  path: string;
  fileName: string;
  partUrls: { partNumber: number; signedUrl: string }[];
}

beforeAll(async () => {
  png = await sharp(path.join(SET5, 'bird.png')).resize(40, 40).png().toBuffer();
  s = await startTestServer({ now: () => clock, engineLimits: { maxOpenUploadsPerUser: 1, maxOutputsPerUser: 2 } });
  user = await addUser(s, 'expiry@example.com', 50);
});
afterAll(async () => {
  await s?.stop();
});

const ask = () =>
  postJson(s.url, '/get-upload-url', user.key, {
    data: { fileSize: png.length, fileType: 'image/png', originalFileName: 'bird.png' },
  });

describe('quotas and expiry', () => {
  it('an expired unfinished upload is deleted and frees its open-upload slot', async () => {
    const first = await ask();
    expect(first.status).toBe(200);
    const sess = dataOf<Session>(first);
    const dir = path.join(s.dataDir, 'uploads', sess.uploadId);
    expect(existsSync(dir)).toBe(true);
    const second = await ask();
    expect(second.status).toBe(400);
    expect(JSON.parse(second.text)).toMatch(/^Bad Request: you have 1 unfinished uploads; the limit is 1\./);

    clock += DEFAULT_LIMITS.uploadTtlMs + 1000;
    await s.engine.sweep();
    expect(existsSync(dir)).toBe(false);
    expect((await ask()).status).toBe(200);
    clock += DEFAULT_LIMITS.uploadTtlMs + 1000;
    await s.engine.sweep();
  });

  it('a completed upload is deleted from disk once its file lifetime has passed', async () => {
    const sess = dataOf<Session>(await ask());
    const put = await httpPut(sess.partUrls[0]!.signedUrl, png);
    expect(put.status).toBe(200);
    const done = await postJson(s.url, '/complete-multipart-upload', user.key, {
      data: { uploadId: sess.uploadId, key: sess.path, parts: [{ PartNumber: 1, ETag: put.headers.etag }] },
    });
    expect(done.status).toBe(200);
    const file = path.join(s.dataDir, sess.path);
    expect(existsSync(file)).toBe(true);

    clock += DEFAULT_LIMITS.uploadTtlMs + 1000;
    await s.engine.sweep();
    expect(existsSync(file)).toBe(true);
    clock += DEFAULT_LIMITS.fileTtlMs;
    await s.engine.sweep();
    expect(existsSync(file)).toBe(false);
  });

  it('outputs count against the output quota until they expire; expired outputs are deleted and no longer served', async () => {
    const form = () => taskForm(BASIC, [{ name: 'file', fileName: 'bird.png', bytes: png }]);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await postForm(s.url, user.key, form());
      expect(r.status, r.text).toBe(200);
      ids.push(dataOf<{ taskId: string }>(r).taskId);
    }
    const results = await Promise.all(ids.map((id) => pollStatus(s.url, user.key, id)));
    expect(results.map((r) => r.status)).toEqual(['PROCESSED', 'PROCESSED']);
    const full = await postForm(s.url, user.key, form());
    expect(full.status).toBe(400);
    expect(JSON.parse(full.text)).toBe(
      'Bad Request: your tasks hold 2 output files and this one adds 1; the limit is 2. Wait for older outputs to expire',
    );

    const link = results[0]!.files[0]!.downloadLink;
    expect((await httpGet(link)).status).toBe(200);
    const taskDir = path.join(s.dataDir, 'tasks', ids[0]!);
    expect(existsSync(taskDir)).toBe(true);

    clock += DEFAULT_LIMITS.fileTtlMs + 1000;
    await s.engine.sweep();
    expect(existsSync(taskDir)).toBe(false);
    expect((await httpGet(link)).status).toBe(404);
    const again = await postForm(s.url, user.key, form());
    expect(again.status, again.text).toBe(200);
    await s.engine.idle();
  });
});
