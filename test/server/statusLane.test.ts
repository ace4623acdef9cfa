/**
 * The status lane (engine/server/statusLane.ts) answers plain get-task-status polls beside Fastify. Over real
 * HTTP against a real server: a poll the lane takes and the same poll sent so that Fastify's route takes it
 * (a Content-Type spelled without the space, which only the route accepts) get the same status, the same
 * bytes and the same rate-limit headers, for answers and for refusals (unknown task, bad JSON, a forbidden key,
 * no taskId, an unexpected failure, the rate limit). Which lane answered is read from the request's debug log
 * line: the lane's request ids are `req-s…`.
 */
import sharp from 'sharp';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errors } from '../../engine/contract/index.js';
import { addUser, BASIC, dataOf, postForm, startTestServer, taskForm, type TestServer } from './helpers.js';

const LANE_TYPE = 'application/json';
const ROUTE_TYPE = 'application/json;charset=utf-8';

let s: TestServer;
let key: string;
let userId: string;
let taskId: string;
let failNext = false;

beforeAll(async () => {
  s = await startTestServer(
    { serverLimits: { rateLimitMax: 1000 } },
    {
      engine: (engine) => ({
        ...engine,
        getTaskStatus: async (caller, body) => {
          if (failNext) {
            failNext = false;
            throw new Error('disk on fire');
          }
          return engine.getTaskStatus(caller, body);
        },
      }),
    },
  );
  ({ key, userId } = await addUser(s, 'lane@example.com', 100));
  const tiny = await sharp({ create: { width: 16, height: 12, channels: 3, background: '#48a' } })
    .png()
    .toBuffer();
  const started = await postForm(
    s.url,
    key,
    taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 't.png', bytes: tiny }]),
  );
  expect(started.status, started.text).toBe(200);
  taskId = dataOf<{ taskId: string }>(started).taskId;
  await s.engine.idle();
});
afterAll(async () => s?.stop());

interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
  /** The request id of the request's debug log line. */
  reqId: string;
}

/** One poll with the given Content-Type and raw body, at debug level so its one log line says who answered. */
async function poll(type: string, body: string, apiKey = key, server = s): Promise<Answer> {
  const mark = server.logs().length;
  server.app.log.level = 'debug';
  try {
    const r = await request(`${server.url}/get-task-status`, {
      method: 'POST',
      headers: { 'content-type': type, 'x-api-key': apiKey },
      body,
    });
    const text = await r.body.text();
    const lines = server
      .logs()
      .slice(mark)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { reqId: string; route?: string });
    const line = lines.find((l) => l.route === '/get-task-status');
    expect(line, 'the request has its log line').toBeDefined();
    return { status: r.statusCode, text, headers: r.headers, reqId: line!.reqId };
  } finally {
    server.app.log.level = 'info';
  }
}

const body = (id: string) => JSON.stringify({ data: { taskId: id } });

describe('the status lane', () => {
  it('answers a plain poll with the bytes and headers Fastify’s route answers', async () => {
    // The route answers first (the lane learns the route's serialiser from it), then the lane.
    const viaRoute = await poll(ROUTE_TYPE, body(taskId));
    const viaLane = await poll(LANE_TYPE, body(taskId));
    expect(viaRoute.reqId).not.toMatch(/^req-s/);
    expect(viaLane.reqId).toMatch(/^req-s/);
    expect(viaLane.status).toBe(200);
    expect(viaLane.text).toBe(viaRoute.text);
    expect(JSON.parse(viaLane.text)).toMatchObject({
      status: 'success',
      data: { status: 'PROCESSED', creditsDeducted: true },
    });
    for (const h of ['content-type', 'content-length', 'x-ratelimit-limit', 'x-ratelimit-reset'])
      expect([h, viaLane.headers[h]]).toEqual([h, viaRoute.headers[h]]);
    expect(viaLane.headers['content-type']).toBe('application/json; charset=utf-8');
    // One limit for both lanes: the lane's poll was counted right after the route's.
    expect(Number(viaLane.headers['x-ratelimit-remaining'])).toBe(
      Number(viaRoute.headers['x-ratelimit-remaining']) - 1,
    );
  });

  it('refuses what the route refuses, with the same status and body', async () => {
    const cases = [
      body('7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b'), // no such task
      '{"data": {', // not JSON
      `{"data": {"taskId": "${taskId}"}, "__proto__": {"x": 1}}`,
      `{"data": {"taskId": "${taskId}"}, "\\u005f_proto__": {"x": 1}}`,
      '{"data": {}}', // no taskId
      '{"data": {"taskId": 7}}',
    ];
    for (const raw of cases) {
      const viaRoute = await poll(ROUTE_TYPE, raw);
      const viaLane = await poll(LANE_TYPE, raw);
      expect(viaLane.reqId, raw).toMatch(/^req-s/);
      expect(viaRoute.status, raw).toBeGreaterThanOrEqual(400);
      expect([viaLane.status, viaLane.text], raw).toEqual([viaRoute.status, viaRoute.text]);
      expect(viaLane.headers['content-type']).toBe('application/json; charset=utf-8');
    }
    const missing = await poll(LANE_TYPE, body('7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b'));
    expect([missing.status, JSON.parse(missing.text)]).toEqual([404, errors.taskNotFound().message]);
  });

  it('answers an unexpected failure with the spec 500 and logs it with its stack, once', async () => {
    await poll(ROUTE_TYPE, body(taskId)); // the serialiser is known
    const mark = s.logs().length;
    failNext = true;
    const r = await request(`${s.url}/get-task-status`, {
      method: 'POST',
      headers: { 'content-type': LANE_TYPE, 'x-api-key': key },
      body: body(taskId),
    });
    expect([r.statusCode, JSON.parse(await r.body.text())]).toEqual([
      errors.serverFailure('get-task-status').status,
      errors.serverFailure('get-task-status').message,
    ]);
    const lines = s
      .logs()
      .slice(mark)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; reqId: string; user?: string; err?: { stack?: string } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, user: userId });
    expect(lines[0]!.reqId).toMatch(/^req-s/);
    expect(lines[0]!.err?.stack).toContain('disk on fire');
  });

  it('keeps the rate limit: the poll past it gets 429 with Retry-After, as from the route', async () => {
    const limited = await startTestServer({ serverLimits: { rateLimitMax: 3, rateLimitWindowMs: 60_000 } });
    try {
      const u = await addUser(limited, 'limited@example.com', 5);
      const id = '7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';
      const first = await poll(ROUTE_TYPE, body(id), u.key, limited); // 404, but the key is known now
      expect(first.status).toBe(404);
      // The serialiser comes with the route's first 200; a 404 does not bring it, so these go to the route.
      const second = await poll(LANE_TYPE, body(id), u.key, limited);
      expect(second.headers['x-ratelimit-remaining']).toBe('1');
      const third = await poll(LANE_TYPE, body(id), u.key, limited);
      expect(third.headers['x-ratelimit-remaining']).toBe('0');
      const fourth = await poll(LANE_TYPE, body(id), u.key, limited);
      expect([fourth.status, JSON.parse(fourth.text)]).toEqual([429, errors.rateLimited().message]);
      expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(0);
      expect(fourth.headers['x-ratelimit-remaining']).toBe('0');
    } finally {
      await limited.stop();
    }
  });

  it('takes a poll once its 429 can come from the lane too', async () => {
    const limited = await startTestServer({ serverLimits: { rateLimitMax: 2, rateLimitWindowMs: 60_000 } });
    try {
      const u = await addUser(limited, 'limited2@example.com', 5);
      const tiny = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123' } })
        .png()
        .toBuffer();
      const started = await postForm(
        limited.url,
        u.key,
        taskForm({ ...BASIC, scale: '1' }, [{ name: 'file', fileName: 't.png', bytes: tiny }]),
      );
      const id = dataOf<{ taskId: string }>(started).taskId;
      await limited.engine.idle();
      const viaRoute = await poll(ROUTE_TYPE, body(id), u.key, limited);
      expect([viaRoute.status, viaRoute.headers['x-ratelimit-remaining']]).toEqual([200, '0']);
      const over = await poll(LANE_TYPE, body(id), u.key, limited);
      expect(over.reqId).toMatch(/^req-s/);
      expect([over.status, JSON.parse(over.text)]).toEqual([429, errors.rateLimited().message]);
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await limited.stop();
    }
  });
});
