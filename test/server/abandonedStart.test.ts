/**
 * A start-task whose client gives up (issue 40): the request is held by the test gate with its file read and
 * nothing saved yet (`start-task-save`, engine/service/startTask.ts), its socket is destroyed, the server is seen
 * to have closed its end, and only then is the request let go. Nothing may be reserved, kept or charged; the same
 * user's next start-task is an ordinary task, charged exactly once. A real server (in process), real sockets, no
 * timing: every wait is a bounded poll on what the server shows.
 */
import { readdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGate, type TestGate } from '../helpers/testGate.js';
import { BOUNDARY, multipartBody } from './rawHttp.js';
import { BASIC, addUser, pollStatus, postForm, dataOf, startTestServer, taskForm, type TestServer } from './helpers.js';

let server: TestServer;
let gate: TestGate;
let png: Buffer;

beforeAll(async () => {
  gate = await createTestGate({ inProcess: true });
  server = await startTestServer();
  png = await sharp({ create: { width: 16, height: 16, channels: 3, background: { r: 200, g: 30, b: 60 } } })
    .png()
    .toBuffer();
});

afterAll(async () => {
  await server?.stop();
  await gate?.close();
});

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const connections = () =>
  new Promise<number>((resolve, reject) => server.app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
const entries = (dir: string) => readdir(dir).catch(() => [] as string[]);

describe('start-task abandoned by its client', () => {
  it('saves, reserves and charges nothing when the socket is gone before the task is saved', async () => {
    const user = await addUser(server, 'gone@example.com', 5);
    const { hostname, port } = new URL(server.url);
    const body = multipartBody(BASIC, [{ name: 'file', fileName: 'gone.png', bytes: png }]);
    await gate.hold('start-task-save');
    const socket = net.connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.on('error', () => undefined);
    socket.write(
      `POST /start-task HTTP/1.1\r\nHost: ${hostname}:${port}\r\nX-Api-Key: ${user.key}\r\n` +
        `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    socket.write(body);
    // The whole body is read and the file is in the task's folder; the record and reservation are not written.
    await gate.reached('start-task-save');
    expect(await entries(path.join(server.dataDir, 'tasks'))).toHaveLength(1);
    socket.destroy();
    await until('the server to close its end of the socket', async () => (await connections()) === 0);
    await gate.release('start-task-save');

    // Let go, the request ends without a record: its folder goes (it would stay with a saved task).
    const gone = async (dir: string) => (await entries(path.join(server.dataDir, dir))).length === 0;
    await until('its task folder to be removed', () => gone('tasks'));
    await until('its streamed parts to be removed', () => gone('incoming'));
    expect(await server.ledger.reservedFor(user.userId)).toBe(0);
    expect((await server.accounts.getUser(user.userId))!.credits).toBe(5);

    // The same user's next start-task is an ordinary task: reserved, PROCESSED, charged exactly once.
    const r = await postForm(
      server.url,
      user.key,
      taskForm(BASIC, [{ name: 'file', fileName: 'kept.png', bytes: png }]),
    );
    expect(r.status, r.text).toBe(200);
    expect(r.headers['x-task-cost']).toBe('1');
    const taskId = dataOf<{ taskId: string }>(r).taskId;
    const done = await pollStatus(server.url, user.key, taskId);
    expect(done.status).toBe('PROCESSED');
    expect(done.deductedCredits).toBe(1);
    await pollStatus(server.url, user.key, taskId);
    expect((await server.accounts.getUser(user.userId))!.credits).toBe(4);
    expect(await server.ledger.reservedFor(user.userId)).toBe(0);
    expect(await entries(path.join(server.dataDir, 'tasks'))).toEqual([taskId]);
  }, 240_000);
});
