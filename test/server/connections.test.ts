/**
 * Connection slots under a keyless flood, against a real `crisp serve` process with its default limits
 * (1 024 connections, 256 per IP): idle keep-alive sockets give way to a new client, and a body trickled
 * at 1 byte/s is cut by the minimum body rate (engine/server/connectionLimits.ts), whatever its
 * Content-Length. Waits are bounded; nothing depends on how fast the machine is.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_LIMITS } from '../../engine/server/options.js';
import { tempDir } from './helpers.js';
import { BOUNDARY } from './rawHttp.js';
import { trickle } from './rawHttp.js';
import { addCliUser, startServe, type ServeProcess } from './serveProcess.js';

const FLOOD_ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6'];
const FLOOD = 1_100;
const CLIENT_ADDRESS = '127.0.0.9';

let serve: ServeProcess;
let key: string;
const flood: net.Socket[] = [];

beforeAll(async () => {
  const dataDir = await tempDir('crisp-connections-');
  key = await addCliUser(dataDir, 'slow@example.com', 5);
  serve = await startServe(dataDir, ['--threads', '1']);
}, 120_000);
afterAll(async () => {
  for (const s of flood) s.destroy();
  await serve?.kill();
});

/** One raw keep-alive GET /healthz from `localAddress`; resolves with the status line's code, or 0 if closed first. */
function healthz(
  port: number,
  localAddress: string,
  keepOpen: boolean,
): Promise<{ status: number; socket: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () =>
      socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n${keepOpen ? '' : 'Connection: close\r\n'}\r\n`),
    );
    let text = '';
    let done = false;
    const finish = (status: number) => {
      if (done) return;
      done = true;
      if (!keepOpen) socket.destroy();
      resolve({ status, socket });
    };
    socket.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m && text.includes('\r\n\r\n')) finish(Number(m[1]));
    });
    socket.on('close', () => finish(0));
    socket.on('error', () => undefined);
    // Bounds a hang only.
    setTimeout(() => finish(0), 30_000).unref();
  });
}

describe('keyless connection exhaustion', () => {
  it(`${FLOOD} idle keep-alive sockets from ${FLOOD_ADDRESSES.length} addresses cannot starve a new client`, async () => {
    const port = Number(new URL(serve.url).port);
    // Under the per-IP cap each, over the total cap together; opened in batches (the listen backlog).
    const perAddress = FLOOD / FLOOD_ADDRESSES.length;
    expect(perAddress).toBeLessThanOrEqual(DEFAULT_SERVER_LIMITS.maxConnectionsPerIp);
    expect(FLOOD).toBeGreaterThan(DEFAULT_SERVER_LIMITS.maxConnections);
    let answered = 0;
    for (let i = 0; i < FLOOD; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, FLOOD - i) }, (_, j) =>
          healthz(port, FLOOD_ADDRESSES[(i + j) % FLOOD_ADDRESSES.length]!, true),
        ),
      );
      for (const r of batch) {
        flood.push(r.socket);
        if (r.status === 200) answered++;
      }
    }
    // Each flood socket got its one answer (a later one may have closed an earlier idle one to get in).
    expect(answered).toBe(FLOOD);
    const results: number[] = [];
    for (let i = 0; i < 30; i++) results.push((await healthz(port, CLIENT_ADDRESS, false)).status);
    expect(results).toEqual(Array.from({ length: 30 }, () => 200));
    for (const s of flood.splice(0)) s.destroy();
  }, 120_000);
});

describe('per-address cap', () => {
  it(`an address with ${DEFAULT_SERVER_LIMITS.maxConnectionsPerIp} idle keep-alive sockets still gets new connections: its oldest idle ones give way`, async () => {
    const port = Number(new URL(serve.url).port);
    const address = '127.0.0.7';
    const cap = DEFAULT_SERVER_LIMITS.maxConnectionsPerIp;
    const idle: net.Socket[] = [];
    for (let i = 0; i < cap; i += 32) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(32, cap - i) }, () => healthz(port, address, true)),
      );
      expect(batch.map((r) => r.status)).toEqual(batch.map(() => 200));
      idle.push(...batch.map((r) => r.socket));
    }
    let closedCount = 0;
    const tenClosed = new Promise<void>((r) => {
      for (const s of idle) s.once('close', () => ++closedCount === 10 && r());
    });
    flood.push(...idle);
    // Before: the 257th connection from the address was closed unanswered although every one of its own was idle.
    // The new ones stay open too, so each one is over the cap when it arrives and makes exactly one way.
    const fresh: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await healthz(port, address, true);
      flood.push(r.socket);
      fresh.push(r.status);
    }
    expect(fresh).toEqual(Array.from({ length: 10 }, () => 200));
    // One idle socket made way per new connection; every other one still answers on its connection.
    await tenClosed;
    const kept = idle.filter((s) => !s.destroyed);
    expect(kept).toHaveLength(cap - 10);
    expect(await Promise.all(kept.map(askAgain))).toEqual(kept.map(() => 200));
    for (const s of flood.splice(0)) s.destroy();
  }, 120_000);
});

/** A second GET /healthz on an open keep-alive socket; resolves with its status code, or 0 if it closes. */
function askAgain(socket: net.Socket): Promise<number> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (d: Buffer) => {
      text += d.toString();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m && text.includes('\r\n\r\n')) done(Number(m[1]));
    };
    const done = (status: number) => {
      socket.off('data', onData);
      resolve(status);
    };
    socket.on('data', onData);
    socket.once('close', () => done(0));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

describe('minimum body data rate', () => {
  it('cuts a start-task body sent at 1 byte/s within 75 s, whatever its Content-Length', async () => {
    const head =
      `POST /start-task HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 10000000\r\n\r\n`;
    const r = await trickle(serve.url, head, Buffer.alloc(200, 0x61), 1_000, 75_000);
    expect(r.closed).toBe(true);
    expect(r.response).toMatch(/^HTTP\/1\.1 408 /);
    const body = r.response.slice(r.response.indexOf('\r\n\r\n') + 4);
    expect(JSON.parse(body)).toMatch(/^Request Timeout: the request body arrived slower than 500 bytes\/s/);
    // Well inside the 300 s whole-request timeout that was the only bound before.
    expect(r.closedAfterMs).toBeLessThan(75_000);
    expect(r.bytesSent).toBeLessThan(75);
  }, 90_000);
});
