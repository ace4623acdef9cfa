/**
 * The contract's response schemas (engine/contract/responses.ts) describe what `crisp serve` really answers:
 * the same zod objects the remote client parses with accept every success body of a real server, and
 * malformed request bodies get the exact contract status and JSON-string body. Each test makes its own user.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESPONSE_SCHEMAS, successEnvelopeSchema } from '../../engine/contract/index.js';
import { addUser, BASIC, pollStatus, postForm, postJson, startTestServer, taskForm, type HttpAnswer, type TestServer } from './helpers.js';

let s: TestServer;
let images: Server;
let imagesBase: string;

beforeAll(async () => {
  s = await startTestServer({ serverLimits: { rateLimitMax: 10_000 } });
  // A loopback image server: the task fails fast (private address refused), so no model runs here.
  images = createServer((_req, res) => void res.writeHead(404).end());
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  imagesBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await s?.stop();
  await new Promise((r) => images?.close(r));
});

function parsed<R extends keyof typeof RESPONSE_SCHEMAS>(route: R, a: HttpAnswer): unknown {
  expect(a.status).toBe(200);
  const envelope = successEnvelopeSchema.parse(a.json);
  const r = RESPONSE_SCHEMAS[route].safeParse(envelope.data);
  expect(r.success ? 'ok' : r.error.message).toBe('ok');
  return r.data;
}

function expectError(a: HttpAnswer, status: number, message: string): void {
  expect({ status: a.status, body: a.text }).toEqual({ status, body: JSON.stringify(message) });
}

describe('crisp serve answers what the response schemas describe', () => {
  it('get-upload-url, get-account, start-task and get-task-status success bodies parse', async () => {
    const u = await addUser(s, 'shapes@example.com', 10);
    parsed('get-upload-url', await postJson(s.url, '/get-upload-url', u.key, { data: { fileSize: 2048, fileType: 'image/webp', originalFileName: 'x.webp' } }));
    expect(parsed('get-account', await postJson(s.url, '/get-account', u.key, {}))).toMatchObject({ email: 'shapes@example.com', currentCredits: 10 });
    const started = await postForm(s.url, u.key, taskForm({ ...BASIC, urls: JSON.stringify([`${imagesBase}/a.png`]) }));
    const { taskId } = parsed('start-task', started) as { taskId: string };
    await pollStatus(s.url, u.key, taskId);
    expect(parsed('get-task-status', await postJson(s.url, '/get-task-status', u.key, { data: { taskId } }))).toMatchObject({ status: 'PROCESSING_FAILED', files: [] });
  });

  it('malformed request bodies get the exact contract status and body', async () => {
    const u = await addUser(s, 'malformed@example.com', 10);
    const post = (route: string, body: unknown) => postJson(s.url, route, u.key, body);
    expectError(await post('/get-upload-url', { data: { fileSize: '12', fileType: 'image/png', originalFileName: 'a.png' } }), 400, "Bad Request: fileSize '12' is not a positive integer");
    expectError(await post('/get-upload-url', { data: { fileSize: 12, fileType: 'image/gif', originalFileName: 'a.png' } }), 400, "Bad Request: fileType 'image/gif' is not one of 'image/jpeg', 'image/png', 'image/webp'");
    expectError(await post('/get-upload-url', { fileSize: 12 }), 400, 'Bad Request: the body must be {"data": {"fileSize", "fileType", "originalFileName"}}');
    expectError(await post('/complete-multipart-upload', { data: { uploadId: 'u', key: 'k' } }), 400, 'Bad Request: Missing required parameters');
    expectError(await post('/complete-multipart-upload', { data: { uploadId: 'u', key: 'k', parts: [{ PartNumber: 0, ETag: 'e' }] } }), 400, 'Bad Request: parts.0.PartNumber: Too small: expected number to be >=1');
    expectError(await post('/get-task-status', { data: { taskId: 7 } }), 400, 'Bad Request: taskId is required');
    expectError(await postForm(s.url, u.key, taskForm({ ...BASIC, scale: '9', urls: '["https://example.com/a.png"]' })), 400, "Bad Request: scale '9' is not an integer from 1 to 8");
    expectError(await postForm(s.url, u.key, taskForm({ ...BASIC, files: '{"path": "x"}' })), 400, 'Bad Request: files must be an array');
  });
});
