/**
 * Prices by output size: the default table keeps the scale-band price up to 16 MP of output and adds
 * per-image surcharges above; start-task quotes from each input's header; a URL input is quoted at the
 * base price and its reservation raised once its size is known (or the task fails, charging nothing).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flatPng } from '../helpers/flatPng.js';
import { DEFAULT_PRICE_TABLE, outputSizeOf, priceOf } from '../../engine/service/credits/priceTable.js';
import { anyImagePoint, createTestGate, type TestGate } from '../helpers/testGate.js';
import { addUser, BASIC, dataOf, pollStatus, postForm, startTestServer, taskForm, type TestServer } from './helpers.js';

const p = (scale: 1 | 2 | 4 | 8, sizes: { width: number; height: number }[] | number, enhanceFace = false) =>
  priceOf(DEFAULT_PRICE_TABLE, { scale, enhanceFace }, sizes);

describe('price table by output size', () => {
  it('keeps the scale-band price up to 16 MP and adds the row surcharge above', () => {
    expect(p(2, 3)).toBe(3);
    expect(p(2, [{ width: 4000, height: 4000 }])).toBe(1);
    expect(p(2, [{ width: 4000, height: 4001 }])).toBe(3);
    expect(p(4, [{ width: 8000, height: 8000 }])).toBe(2 + 2);
    expect(p(4, [{ width: 12000, height: 12000 }])).toBe(2 + 6);
    expect(p(8, [{ width: 16384, height: 16384 }], true)).toBe(4 + 1 + 12);
    expect(
      p(2, [
        { width: 100, height: 100 },
        { width: 6000, height: 6000 },
      ]),
    ).toBe(1 + 3);
  });
});

describe('price by work: the pixels the model produces', () => {
  const work = (w: number, h: number, scale: 1 | 2 | 4 | 8, passes = 1) =>
    priceOf(DEFAULT_PRICE_TABLE, { scale, enhanceFace: false }, [
      outputSizeOf({ width: w, height: h }, scale, { nativeScale: 4, passes }),
    ]);

  it('prices ×1 of a large image by the ×4 model work it takes, and leaves ×2 and above unchanged', () => {
    // 16 MP at ×1: 256 model MP (+2), the same work and price as ×2 of it (64 MP output, +2).
    expect(work(4000, 4000, 1)).toBe(1 + 2);
    expect(work(4000, 4000, 2)).toBe(1 + 2);
    // Ordinary images keep the scale-band price at every scale.
    expect(work(1000, 1000, 1)).toBe(1);
    expect(work(2000, 2000, 2)).toBe(1);
    expect(work(1000, 1000, 4)).toBe(2);
    expect(work(2100, 2100, 2)).toBe(3);
    // ×1 of the largest input (40 MP: 640 model MP) takes the top row.
    expect(work(8000, 5000, 1)).toBe(1 + 12);
    // Two passes count the model's work twice.
    expect(work(2000, 2000, 1, 2)).toBe(1 + 2);
  });

  it('keeps following the work past the rows: one credit per started 96 model MP above 1152 MP', () => {
    // 72 MP at ×1 is 1152 model MP: the top row's +12, and the line's own value there.
    expect(work(9000, 8000, 1)).toBe(1 + 12);
    expect(work(9000, 8001, 1)).toBe(1 + 13);
    // The audit's flat 400 MP image at ×1: 6400 model MP, 67 credits of work (it was 13 in all).
    expect(work(20000, 20000, 1)).toBe(1 + 67);
    // The largest input (2^30 px, 1074 MP) at ×1: 17180 model MP.
    expect(work(32768, 32768, 1)).toBe(1 + 179);
  });
});

describe('start-task prices by the output size', () => {
  let s: TestServer;
  let images: Server;
  let imagesBase: string;
  let large: Buffer;
  let gate: TestGate;
  let sixteen: Buffer;

  beforeAll(async () => {
    // The server runs in this process; the test gate holds its tasks before their image where a test asks.
    gate = await createTestGate({ inProcess: true });
    // 2100² at ×2 is a 17.6 MP output: one row above the base price.
    large = await sharp({ create: { width: 2100, height: 2100, channels: 3, background: { r: 90, g: 120, b: 200 } } })
      .png()
      .toBuffer();
    sixteen = await sharp({ create: { width: 4000, height: 4000, channels: 3, background: { r: 9, g: 9, b: 9 } } })
      .png()
      .toBuffer();
    images = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(large));
    await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
    imagesBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
    s = await startTestServer({ allowPrivateUrls: true });
  });
  afterAll(async () => {
    await s?.stop();
    images?.close();
    await gate?.close();
  });

  it('quotes a large file part with its size surcharge', async () => {
    const u = await addUser(s, 'large@example.com', 10);
    // Held before its image (test gate), so the reservation is looked at before the task can settle.
    await gate.hold(anyImagePoint(0));
    const r = await postForm(s.url, u.key, taskForm(BASIC, [{ name: 'file', fileName: 'large.png', bytes: large }]));
    expect(r.status, r.text).toBe(200);
    expect(r.headers['x-task-cost']).toBe('3');
    await gate.reached(anyImagePoint(0));
    expect(await s.ledger.reservedFor(u.userId)).toBe(3);
    await s.engine.cancelTask({ userId: u.userId, email: 'large@example.com' }, dataOf<{ taskId: string }>(r).taskId);
    await gate.release(anyImagePoint(0));
  });

  it('quotes ×1 of a 16 MP file part by the model work (input MP × 4² for the ×4 model)', async () => {
    const u = await addUser(s, 'work@example.com', 10);
    // Held before its image (test gate), so the reservation is looked at before the task can settle.
    await gate.hold(anyImagePoint(0));
    const r = await postForm(
      s.url,
      u.key,
      taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 'sixteen.png', bytes: sixteen }]),
    );
    expect(r.status, r.text).toBe(200);
    expect(r.headers['x-task-cost']).toBe('3');
    await gate.reached(anyImagePoint(0));
    expect(await s.ledger.reservedFor(u.userId)).toBe(3);
    await s.engine.cancelTask({ userId: u.userId, email: 'work@example.com' }, dataOf<{ taskId: string }>(r).taskId);
    await gate.release(anyImagePoint(0));
  });

  it('quotes a flat 400 MP file part at ×1 by its work: 68 credits, refused with 402 below that', async () => {
    const giant = await flatPng(20000, 20000);
    const form = () => taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 'flat.png', bytes: giant }]);
    const poor = await addUser(s, 'flat-poor@example.com', 67);
    const refused = await postForm(s.url, poor.key, form());
    expect(refused.status).toBe(402);
    expect(refused.text).toBe('"Insufficient credits"');
    expect(await s.ledger.reservedFor(poor.userId)).toBe(0);

    const u = await addUser(s, 'flat@example.com', 68);
    // Held before its image (test gate): the giant is quoted and reserved, never decoded.
    await gate.hold(anyImagePoint(0));
    const r = await postForm(s.url, u.key, form());
    expect(r.status, r.text).toBe(200);
    expect(r.headers['x-task-cost']).toBe('68');
    expect(dataOf<{ creditsToDeduct: number }>(r).creditsToDeduct).toBe(68);
    await gate.reached(anyImagePoint(0));
    expect(await s.ledger.reservedFor(u.userId)).toBe(68);
    await s.engine.cancelTask({ userId: u.userId, email: 'flat@example.com' }, dataOf<{ taskId: string }>(r).taskId);
    await gate.release(anyImagePoint(0));
    expect(await s.ledger.reservedFor(u.userId)).toBe(0);
  });

  it('raises a URL task reservation once the image size is known', async () => {
    const u = await addUser(s, 'url@example.com', 10);
    // Held before its image (test gate): the fetch, and so the new quote, come before it.
    await gate.hold(anyImagePoint(0));
    const r = await postForm(s.url, u.key, taskForm({ ...BASIC, urls: JSON.stringify([`${imagesBase}/large.png`]) }));
    expect(r.status, r.text).toBe(200);
    expect(r.headers['x-task-cost']).toBe('1');
    const caller = { userId: u.userId, email: 'url@example.com' };
    const taskId = dataOf<{ taskId: string }>(r).taskId;
    await gate.reached(anyImagePoint(0));
    expect(await s.ledger.reservedFor(u.userId)).toBe(3);
    expect((await s.engine.getTaskRecord(caller, taskId)).creditsToDeduct).toBe(3);
    await s.engine.cancelTask(caller, taskId);
    await gate.release(anyImagePoint(0));
  });

  it('fails a URL task whose image costs more than the user can pay, charging nothing', async () => {
    const u = await addUser(s, 'poor@example.com', 2);
    const r = await postForm(s.url, u.key, taskForm({ ...BASIC, urls: JSON.stringify([`${imagesBase}/large.png`]) }));
    expect(r.status, r.text).toBe(200);
    const done = await pollStatus(s.url, u.key, dataOf<{ taskId: string }>(r).taskId);
    expect(done.status).toBe('PROCESSING_FAILED');
    expect(done.error).toBe(
      'the images at these URLs cost 3 credits at their size (1 were reserved) and your available credits do not cover the difference',
    );
    expect(done.creditsDeducted).toBe(false);
    expect(await s.ledger.reservedFor(u.userId)).toBe(0);
  });
});
