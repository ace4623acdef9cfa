/**
 * Issue 40 (High): one image URL took the whole server down. undici 7's HTTP/1 parser asserted `!this.paused`
 * in its socket 'end' handler — an uncatchable AssertionError — when the image server sent Content-Length, the
 * body and FIN (`Connection: close`) while the response body was paused under backpressure (nodejs/undici#5360).
 *
 * Replayed here against real processes: a raw `net` server answers every GET with headers, a 1.5 MB body (far
 * above any stream's high-water mark) and FIN, all in one go. The fetching process is held at the test gate
 * `url-body` — headers read, body not yet — so its reader is as slow as it gets: the whole answer, FIN
 * included, is in flight while nothing reads it. Once the raw server has handed every byte to the kernel the
 * hold is released. Four URL tasks on `crisp serve`, two on `crisp worker` (PostgreSQL): each must end
 * PROCESSED and the process must still be up. Before the fix every process died at one of the first URLs.
 */
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { createTestGate, type TestGate } from '../helpers/testGate.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { BASIC, pollStatus, postForm, taskForm, tempDir } from './helpers.js';
import { addCliUser, startServe, startWorker, type ServeProcess, type WorkerProcess } from './serveProcess.js';

const BODY_BYTES = 80_000;
const POINT = 'url-body';

/** A valid 32×32 PNG made 1.5 MB by an ancillary chunk decoders skip: big on the wire, instant to upscale. */
async function bulkyPng(): Promise<Buffer> {
  const small = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();
  const data = Buffer.alloc(BODY_BYTES - small.length - 12, 0x5a);
  const typed = Buffer.concat([Buffer.from('crSp', 'latin1'), data]);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length);
  const tail = Buffer.alloc(4);
  tail.writeUInt32BE(crc32(typed) >>> 0);
  const iend = small.length - 12;
  return Buffer.concat([small.subarray(0, iend), head, typed, tail, small.subarray(iend)]);
}

/**
 * Answers each request with Content-Length, the whole body and FIN in one write. `sent(n)` resolves once the
 * n-th answer (0-based) is entirely in the kernel's hands ('finish').
 */
interface RawImageServer {
  base: string;
  sent(n: number): Promise<void>;
  close(): Promise<void>;
}

async function rawImageServer(body: Buffer): Promise<RawImageServer> {
  const finished: Promise<void>[] = [];
  const waiting: ((p: Promise<void>) => void)[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.resume(); // whatever else the client sends is read and dropped
      const done = new Promise<void>((resolve) => socket.once('finish', () => resolve()));
      finished.push(done);
      waiting.shift()?.(done);
      socket.end(
        Buffer.concat([
          Buffer.from(
            `HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
            'latin1',
          ),
          body,
        ]),
      );
    };
    socket.on('data', onData);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    base: `http://127.0.0.1:${port}`,
    async sent(n) {
      if (finished[n]) return finished[n];
      return new Promise<void>((resolve) => waiting.push((p) => void p.then(resolve)));
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const taskIdOf = (a: { json: unknown }) => (a.json as { data: { taskId: string } }).data.taskId;

let png: Buffer;
let images: RawImageServer;
let root: string;
const procs: { kill(): Promise<void> }[] = [];

beforeAll(async () => {
  png = await bulkyPng();
  expect(png.length).toBe(BODY_BYTES);
  images = await rawImageServer(png);
  root = await tempDir('crisp-paused-body-');
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await images?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

interface Fetcher {
  output(): string;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `work`, unless the process that fetches dies first: then the test fails at once, with its output. */
async function whileAlive<T>(fetcher: Fetcher, work: Promise<T>): Promise<T> {
  const died = fetcher.exited().then(({ code, signal }) => {
    throw new Error(`the fetching process died (${signal ?? `exit ${code}`}):\n${fetcher.output().slice(-3000)}`);
  });
  return Promise.race([work, died]);
}

/** One URL task, its fetch held until the raw server has sent everything: answers the task's final status. */
async function heldUrlTask(gate: TestGate, api: string, key: string, n: number, fetcher: Fetcher): Promise<string> {
  await gate.hold(POINT);
  const started = await postForm(
    api,
    key,
    taskForm({ ...BASIC, urls: JSON.stringify([`${images.base}/img${n}.png`]) }),
  );
  expect(started.status).toBe(200);
  await whileAlive(fetcher, gate.reached(POINT));
  await images.sent(n);
  await gate.release(POINT);
  const done = await whileAlive(fetcher, pollStatus(api, key, taskIdOf(started)));
  expect(done.error).toBeUndefined();
  expect(done.files[0]!.dimensions).toEqual({ width: 64, height: 64 });
  return done.status;
}

describe('an image server that closes while the reader is slow', () => {
  let served = 0;

  it('crisp serve: four URL tasks end PROCESSED and the server stays up', async () => {
    const dataDir = path.join(root, 'serve');
    const gate = await createTestGate();
    const key = await addCliUser(dataDir, 'urls@example.com', 100);
    const serve: ServeProcess = await startServe(dataDir, ['--allow-private-urls', '--threads', '1'], gate.env);
    procs.push(serve);
    try {
      for (let i = 0; i < 4; i++) {
        expect(await heldUrlTask(gate, serve.url, key, served++, serve)).toBe('PROCESSED');
        expect(serve.child.exitCode).toBeNull();
      }
      expect(serve.output()).not.toMatch(/AssertionError|uncaught/i);
    } finally {
      await gate.close();
    }
  }, 240_000);

  describe('crisp worker (PostgreSQL)', () => {
    let pg: TempPostgres;
    let pool: Pool;

    beforeAll(async () => {
      pg = await startTempPostgres();
    }, 120_000);
    afterAll(async () => {
      // The API and worker processes hold sessions: they go before the database does.
      await Promise.all(procs.map((p) => p.kill()));
      await pool?.end();
      await pg?.stop();
    });

    it('two URL tasks end PROCESSED and the worker stays up', async () => {
      const dbUrl = await createDatabase(pg.url, 'crisp_paused_body');
      pool = await openPostgres(dbUrl, { max: 2 });
      const storage = path.join(root, 'shared');
      const api = await startServe(path.join(root, 'api'), ['--db', dbUrl, '--storage', storage, '--workers', '0']);
      procs.push(api);
      const { apiKey } = await createPgAccountStore(pool).addUser({ email: 'worker-urls@example.com', credits: 100 });
      const gate = await createTestGate();
      const worker: WorkerProcess = await startWorker(
        ['--db', dbUrl, '--storage', storage, '--allow-private-urls', '--threads', '1'],
        gate.env,
      );
      procs.push(worker);
      try {
        for (let i = 0; i < 2; i++) {
          expect(await heldUrlTask(gate, api.url, apiKey, served++, worker)).toBe('PROCESSED');
          expect(worker.child.exitCode).toBeNull();
        }
        expect(worker.output()).not.toMatch(/AssertionError|uncaught/i);
      } finally {
        await gate.close();
      }
    }, 240_000);
  });
});
