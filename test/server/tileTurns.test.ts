/**
 * Fair at the grain of work (issue 40): while one user's giant image runs, another user's small image is
 * PROCESSED before the giant's next tile runs. A real `crisp serve` (in process, real model, real accounts) and
 * the test gate: the giant (a flat 640×640 PNG at ×1: four 320² CPU tiles of a ×4 model) is held at its
 * second tile boundary (`tile-1`, engine/core/pipeline/infer.ts) after its first tile ran; the small image's
 * only tile is `tile-0`, so the hold never touches it. No timing: every wait is a bounded poll.
 * The audit's case, a flat 20000×20000 PNG at ×1 (1600 CPU tiles of 500²), is held the same way and then cancelled
 * there: the suite never runs its tiles, and the cancel must leave no charge, no reservation and no output.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flatPng } from '../helpers/flatPng.js';
import { createTestGate, type TestGate } from '../helpers/testGate.js';
import {
  BASIC,
  addUser,
  dataOf,
  postForm,
  postJson,
  startTestServer,
  taskForm,
  type StatusData,
  type TestServer,
} from './helpers.js';

let server: TestServer;
let gate: TestGate;

beforeAll(async () => {
  gate = await createTestGate({ inProcess: true });
  server = await startTestServer();
});

afterAll(async () => {
  await server?.stop();
  await gate?.close();
});

const flat = (side: number) =>
  sharp({ create: { width: side, height: side, channels: 3, background: { r: 90, g: 140, b: 200 } } })
    .png()
    .toBuffer();

async function status(key: string, taskId: string): Promise<StatusData> {
  const r = await postJson(server.url, '/get-task-status', key, { data: { taskId } });
  expect(r.status).toBe(200);
  return dataOf<StatusData>(r);
}

async function untilEnded(key: string, taskId: string): Promise<StatusData> {
  const end = Date.now() + 300_000;
  for (;;) {
    const s = await status(key, taskId);
    if (s.status === 'PROCESSED' || s.status === 'PROCESSING_FAILED') return s;
    if (Date.now() > end) throw new Error(`task ${taskId} still ${s.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("another user's image runs between a giant image's tiles", () => {
  it('a 16×16 task is PROCESSED while the giant is held before its second tile; then the giant, each charged once', async () => {
    const giantUser = await addUser(server, 'giant@example.com', 10);
    const smallUser = await addUser(server, 'small@example.com', 10);
    await gate.hold('tile-1');
    const g = await postForm(
      server.url,
      giantUser.key,
      taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 'giant.png', bytes: await flat(640) }]),
    );
    expect(g.status).toBe(200);
    const giantId = dataOf<{ taskId: string }>(g).taskId;
    // The giant's first tile has run; its second waits at the boundary.
    await gate.reached('tile-1', 240_000);

    const s = await postForm(
      server.url,
      smallUser.key,
      taskForm(BASIC, [{ name: 'file', fileName: 'small.png', bytes: await flat(16) }]),
    );
    expect(s.status).toBe(200);
    const smallId = dataOf<{ taskId: string }>(s).taskId;
    const small = await untilEnded(smallUser.key, smallId);
    expect(small.status).toBe('PROCESSED');
    expect(small.files.map((f) => f.dimensions)).toEqual([{ width: 32, height: 32 }]);
    expect(small.creditsDeducted).toBe(true);
    expect(small.deductedCredits).toBe(1);

    // The giant has not passed its second tile: still held there, still running.
    const held = await status(giantUser.key, giantId);
    expect(held.status).toBe('ENHANCING');
    expect(Number(await gate.reached('tile-1', 1_000))).toBe(process.pid);

    await gate.release('tile-1');
    const giant = await untilEnded(giantUser.key, giantId);
    expect(giant.status).toBe('PROCESSED');
    expect(giant.files.map((f) => f.dimensions)).toEqual([{ width: 640, height: 640 }]);
    expect(giant.deductedCredits).toBe(1);
    // Every tile was run and written: the four tiles' centres of the flat image have one colour.
    const out = sharp(Buffer.from(await (await fetch(giant.files[0]!.downloadLink)).arrayBuffer()));
    const { data, info } = await out.raw().toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) => [0, 1, 2].map((c) => data[(y * info.width + x) * info.channels + c]!);
    const centre = at(160, 160);
    for (const [x, y] of [
      [480, 160],
      [160, 480],
      [480, 480],
    ] as const)
      at(x, y).forEach((v, c) => expect(Math.abs(v - centre[c]!)).toBeLessThanOrEqual(1));

    // Each charged exactly once: polls after PROCESSED deduct nothing more, and nothing stays reserved.
    await status(giantUser.key, giantId);
    await status(smallUser.key, smallId);
    expect((await server.accounts.getUser(giantUser.userId))!.credits).toBe(9);
    expect((await server.accounts.getUser(smallUser.userId))!.credits).toBe(9);
    expect(await server.ledger.reservedFor(giantUser.userId)).toBe(0);
    expect(await server.ledger.reservedFor(smallUser.userId)).toBe(0);
  }, 400_000);

  it('while a flat 400 MP task is held before its second tile, a 16×16 task is PROCESSED; the giant, cancelled, charges nothing and leaves no output', async () => {
    const giantUser = await addUser(server, 'giant400@example.com', 68);
    const smallUser = await addUser(server, 'small400@example.com', 10);
    await gate.hold('tile-1');
    const g = await postForm(
      server.url,
      giantUser.key,
      taskForm({ ...BASIC, scale: '1' }, [
        { name: 'file', fileName: 'giant400.png', bytes: await flatPng(20000, 20000) },
      ]),
    );
    expect(g.status, g.text).toBe(200);
    // Priced by its work (test/server/price.test.ts): all of the user's 68 credits are reserved.
    expect(g.headers['x-task-cost']).toBe('68');
    const giantId = dataOf<{ taskId: string }>(g).taskId;
    await gate.reached('tile-1', 240_000);
    expect(await server.ledger.reservedFor(giantUser.userId)).toBe(68);
    // Its first tile has run: the task folder holds its output begun, a partial output the cancel must take away.
    const taskDir = path.join(server.dataDir, 'tasks', giantId);
    expect((await readdir(taskDir, { recursive: true })).some((n) => n.startsWith('outputs/'))).toBe(true);

    const s = await postForm(
      server.url,
      smallUser.key,
      taskForm(BASIC, [{ name: 'file', fileName: 'small400.png', bytes: await flat(16) }]),
    );
    expect(s.status).toBe(200);
    const smallId = dataOf<{ taskId: string }>(s).taskId;
    const small = await untilEnded(smallUser.key, smallId);
    expect(small.status).toBe('PROCESSED');
    expect(small.files.map((f) => f.dimensions)).toEqual([{ width: 32, height: 32 }]);
    expect(small.deductedCredits).toBe(1);

    // The giant is still held before its second tile of 1600; it is cancelled there (the service's cancel:
    // the spec has no cancel endpoint). Cancel waits for the running step, which stops at the run's own abort
    // check once the gate lets it go, so the gate is released while the cancel is pending.
    expect((await status(giantUser.key, giantId)).status).toBe('ENHANCING');
    expect(Number(await gate.reached('tile-1', 1_000))).toBe(process.pid);
    const cancelled = server.engine.cancelTask({ userId: giantUser.userId, email: 'giant400@example.com' }, giantId);
    await gate.release('tile-1');
    await cancelled;
    const giant = await untilEnded(giantUser.key, giantId);
    expect(giant.status).toBe('PROCESSING_FAILED');
    expect(giant.error).toBe('Cancelled');
    expect(giant.creditsDeducted).toBe(false);
    expect(giant.files).toEqual([]);

    // The small user is charged exactly once (polls after PROCESSED deduct nothing more); the giant's
    // reservation is released and nothing of it charged.
    await status(smallUser.key, smallId);
    expect((await server.accounts.getUser(smallUser.userId))!.credits).toBe(9);
    expect(await server.ledger.reservedFor(smallUser.userId)).toBe(0);
    expect((await server.accounts.getUser(giantUser.userId))!.credits).toBe(68);
    expect(await server.ledger.reservedFor(giantUser.userId)).toBe(0);
    // No partial output: the giant's task folder keeps its record and its input only, and the data folder
    // holds nothing near the image's size (400 MP: 1.2 GB as 8-bit RGB).
    expect((await readdir(taskDir, { recursive: true })).sort()).toEqual(['inputs', 'inputs/0', 'task.json']);
    expect(await bytesUnder(server.dataDir)).toBeLessThan(20 * 2 ** 20);
  }, 400_000);
});

/** Bytes of every file under `dir`. */
async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir, { recursive: true })) {
    const st = await stat(path.join(dir, name));
    if (st.isFile()) total += st.size;
  }
  return total;
}
