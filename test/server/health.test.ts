/** Operator endpoints: /healthz, /readyz and the token-gated Prometheus /metrics. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addUser,
  BASIC,
  dataOf,
  pollStatus,
  postForm,
  SET5,
  startTestServer,
  taskForm,
  type TestServer,
} from './helpers.js';

let s: TestServer;
let bare: TestServer;
beforeAll(async () => {
  s = await startTestServer({ metricsToken: 'tok-123' });
  bare = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
  await bare?.stop();
});

async function get(url: string, headers: Record<string, string> = {}) {
  const r = await request(url, { headers });
  return { status: r.statusCode, type: String(r.headers['content-type'] ?? ''), text: await r.body.text() };
}

describe('operator endpoints', () => {
  it('answers /healthz and /readyz without a key', async () => {
    expect(await get(`${s.url}/healthz`)).toMatchObject({ status: 200, text: '{"status":"ok"}' });
    expect(await get(`${s.url}/readyz`)).toMatchObject({ status: 200, text: '{"status":"ready"}' });
  });

  it('serves /metrics only to the token, with tasks, queue depth, durations and credits charged', async () => {
    expect((await get(`${s.url}/metrics`)).status).toBe(401);
    expect((await get(`${s.url}/metrics`, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await get(`${bare.url}/metrics`, { authorization: 'Bearer tok-123' })).status).toBe(404);

    const { key } = await addUser(s, 'm@example.com', 5);
    const bytes = await readFile(path.join(SET5, 'bird.png'));
    const { taskId } = dataOf<{ taskId: string }>(
      await postForm(s.url, key, taskForm(BASIC, [{ name: 'file', fileName: 'bird.png', bytes }])),
    );
    expect(await pollStatus(s.url, key, taskId)).toMatchObject({ status: 'PROCESSED', deductedCredits: 1 });

    const m = await get(`${s.url}/metrics`, { authorization: 'Bearer tok-123' });
    expect(m.status).toBe(200);
    expect(m.type).toContain('text/plain');
    expect(m.text).toContain('crisp_tasks{status="PROCESSED"} 1\n');
    expect(m.text).toContain('crisp_tasks{status="PROCESSING_FAILED"} 0\n');
    expect(m.text).toContain('crisp_queue_depth 0\n');
    expect(m.text).toContain('crisp_task_duration_seconds_count 1\n');
    expect(m.text).toContain('crisp_credits_charged_total 1\n');
    expect(m.text).not.toContain('m@example.com');
  });
});
