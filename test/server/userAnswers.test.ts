/**
 * What an API user is told (issue 27's low items): `scale` is parsed strictly (exactly one digit 1–8), each
 * refusal names its real reason, and no answer carries a server path or a server command — the operator's
 * log keeps that detail.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicMessage } from '../../engine/service/tasks/userMessage.js';
import { errors } from '../../engine/contract/index.js';
import { addUser, BASIC, postForm, postJson, SET5, startTestServer, taskForm, type TestServer } from './helpers.js';

let s: TestServer;
let bare: TestServer;
let emptyModels: string;
let key: string;
let bareKey: string;
let png: Buffer;

beforeAll(async () => {
  png = await sharp(path.join(SET5, 'bird.png')).resize(24, 24).png().toBuffer();
  emptyModels = await mkdtemp(path.join(os.tmpdir(), 'crisp-no-models-'));
  s = await startTestServer();
  // A server whose models folder is empty: every task names a model that is not installed.
  bare = await startTestServer({ modelDirs: [emptyModels] });
  key = (await addUser(s, 'answers@example.com', 20)).key;
  bareKey = (await addUser(bare, 'bare@example.com', 20)).key;
});
afterAll(async () => {
  await s?.stop();
  await bare?.stop();
  await rm(emptyModels, { recursive: true, force: true });
});

const start = (server: TestServer, k: string, fields: Record<string, string>) =>
  postForm(server.url, k, taskForm(fields, [{ name: 'file', fileName: 'bird.png', bytes: png }]));

describe('strict scale', () => {
  it.each([' 4', '4\n', '04', '+4'])('refuses scale %j and says how to write it', async (scale) => {
    const r = await start(s, key, { ...BASIC, scale });
    expect(r.status).toBe(400);
    // (A form encoder sends "4\n" as "4\r\n", as browsers do.)
    expect(r.json).toMatch(
      /^Bad Request: scale .+ must be written as one digit from 1 to 8, with no spaces, sign or leading zeros$/,
    );
  });

  it('refuses scales out of range as such, and takes exactly "4"', async () => {
    for (const scale of ['0', '9', '4.0'])
      expect((await start(s, key, { ...BASIC, scale })).json).toBe(
        `Bad Request: scale '${scale}' is not an integer from 1 to 8`,
      );
    const ok = await start(s, key, { ...BASIC, scale: '4' });
    expect(ok.status, ok.text).toBe(200);
  });
});

describe('get-upload-url names the real reason', () => {
  it('a missing fileSize is required, not "undefined is not a positive integer"', async () => {
    const r = await postJson(s.url, '/get-upload-url', key, {
      data: { fileType: 'image/png', originalFileName: 'a.png' },
    });
    expect([r.status, r.json]).toEqual([400, 'Bad Request: fileSize is required (the size of the file in bytes)']);
  });

  it('fileSize 1e18 is over the size limit (413), not "not a positive integer"', async () => {
    const r = await postJson(
      s.url,
      '/get-upload-url',
      key,
      undefined,
      '{"data": {"fileSize": 1e18, "fileType": "image/png", "originalFileName": "a.png"}}',
    );
    expect(r.status).toBe(413);
    expect(r.json).toBe(
      `Payload Too Large: fileSize 1000000000000000000 exceeds the limit of ${s.engine.limits.maxFileSize} bytes`,
    );
  });

  it('a url-encoded body on a JSON endpoint is told the type to send', async () => {
    const form = await fetch(`${s.url}/get-upload-url`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'fileSize=10&fileType=image%2Fpng',
    });
    expect(form.status).toBe(400);
    expect(await form.json()).toBe('Bad Request: unsupported Content-Type: send application/json');
  });
});

describe('no server path or command in an answer', () => {
  it('a model missing on the server is named as such; the install hint goes to the operator log', async () => {
    const r = await start(bare, bareKey, BASIC);
    expect(r.status).toBe(400);
    expect(r.json).toBe(`Bad Request: model '${BASIC.model}' is not installed on this server`);
    expect(r.text).not.toContain(emptyModels);
    expect(r.text).not.toMatch(/crisp |\.onnx/);
    expect(bare.logs()).toContain('crisp models fetch digital-art-4x');
    expect(bare.logs()).toContain(emptyModels);
  });

  it('task errors lose absolute paths but keep URLs', () => {
    const logged: string[] = [];
    const log = (d: string) => logged.push(d);
    const e = Object.assign(new Error("ENOENT: no such file or directory, open '/srv/crisp/tasks/x/inputs/0'"), {
      code: 'ENOENT',
    });
    const said = publicMessage(e, 'bird.png', log);
    expect(said).toBe(
      "Something went wrong while upscaling bird.png: ENOENT: no such file or directory, open '(a server path)'",
    );
    expect(logged).toEqual([expect.stringContaining('/srv/crisp/tasks/x/inputs/0')]);
    const url = 'could not fetch http://example.com/a/b.png: the server answered HTTP 404';
    // What engine/service/inputs/fetchImage.ts throws for a URL it could not fetch.
    const fetchError = errors.badRequest(url);
    expect(publicMessage(fetchError, undefined, log)).toBe(url);
  });

  it('a refusal that names a server folder (the disk check) loses it', async () => {
    // A 40 MP input needs far more disk for its raster than the reserve leaves: refused from the header.
    const tight = await startTestServer({ engineLimits: { diskReserveBytes: Number.MAX_SAFE_INTEGER } });
    try {
      const u = await addUser(tight, 'disk@example.com', 20);
      const r = await start(tight, u.key, BASIC);
      expect(r.status).toBe(400);
      expect(r.json).toMatch(
        /^Bad Request: Not enough free disk space to upscale "bird\.png": .* in \(a server path\)/,
      );
      expect(r.text).not.toContain(tight.dataDir);
      expect(tight.logs()).toContain(tight.dataDir);
    } finally {
      await tight.stop();
    }
  });
});
