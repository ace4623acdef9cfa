/**
 * The remote client parses every answer with the contract's response schemas: a misbehaving server (a field
 * missing, a wrong type, not JSON, an HTML 502 from a proxy) is one clear sentence, never `undefined` later.
 * A tiny node:http server plays the misbehaving service; each test sets its own answer (no shared order).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendError, ServerError } from '../../app/backends/errors.js';
import { createContractClient, type ContractClient } from '../../app/remote/contractClient.js';

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

const GOOD_STATUS = {
  status: 'PROCESSING',
  progress: '0%',
  files: [],
  deductedCredits: 0,
  creditsDeducted: false,
  model: 'digital-art-4x',
  scale: 2,
  saveImageAs: 'png',
  compression: 0,
  batchMode: false,
};

const json = (value: unknown, status = 200): Answer => ({ status, contentType: 'application/json', body: JSON.stringify(value) });

describe('the remote client refuses answers that are not the contract', () => {
  // Answers are looked up by the task id the test sends, so tests never depend on each other's order.
  const answers = new Map<string, Answer>();
  let server: http.Server;
  let client: ContractClient;
  let origin: string;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        let key = req.url ?? '';
        try {
          const id = (JSON.parse(raw) as { data?: { taskId?: string } }).data?.taskId;
          if (id) key = id;
        } catch {
          // not JSON: keyed by URL
        }
        const a = answers.get(key) ?? json('Not Found', 404);
        res.writeHead(a.status, { 'content-type': a.contentType });
        res.end(a.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = createContractClient({ baseUrl: origin, apiKey: 'crisp_test-key-0123456789' });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function statusError(taskId: string, answer: Answer): Promise<BackendError> {
    answers.set(taskId, answer);
    const e: unknown = await client.getTaskStatus(taskId).then(
      (v) => v,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(BackendError);
    return e as BackendError;
  }

  it('a well-formed status is returned as parsed data (the schemas accept the contract)', async () => {
    answers.set('good', json({ status: 'success', data: { ...GOOD_STATUS, extra: 'ignored' } }));
    const s = await client.getTaskStatus('good');
    expect(s.status).toBe('PROCESSING');
    expect(s.scale).toBe(2);
    expect(s.files).toEqual([]);
  });

  it('a missing field names the field', async () => {
    const { progress: _omitted, ...rest } = GOOD_STATUS;
    const e = await statusError('missing', json({ status: 'success', data: rest }));
    expect(e).toBeInstanceOf(ServerError);
    expect(e.status).toBe(502);
    expect(e.message).toMatch(new RegExp(`^Unexpected response from the service at ${origin} \\(get-task-status\\): data\\.progress: `));
  });

  it('a wrong type deep in files[] names its path', async () => {
    const file = {
      fileName: 'a.png', fileType: 'image/png', fileSize: '12', originalFileName: 'a.png', path: 'u/a.png',
      createdAt: 1, expiresAt: 2, dimensions: { width: 1, height: 1 },
    };
    const e = await statusError('wrongtype', json({ status: 'success', data: { ...GOOD_STATUS, files: [file] } }));
    expect(e.message).toContain('(get-task-status): data.files[0].fileSize: ');
    expect(e.message).toMatch(/expected number/);
  });

  it('an unknown status value is refused', async () => {
    const e = await statusError('badenum', json({ status: 'success', data: { ...GOOD_STATUS, status: 'DONE' } }));
    expect(e.message).toContain('data.status: ');
  });

  it('a body without the success envelope is refused', async () => {
    const e = await statusError('noenvelope', json(GOOD_STATUS));
    expect(e.message).toMatch(/\(get-task-status\): not a \{"status": "success", "data": …\} object/);
  });

  it('a 200 that is not JSON says so, with its content type', async () => {
    const e = await statusError('notjson', { status: 200, contentType: 'text/plain; charset=utf-8', body: 'ok' });
    expect(e).toBeInstanceOf(ServerError);
    expect(e.message).toBe(`Unexpected response from the service at ${origin} (get-task-status): not JSON (text/plain).`);
  });

  it('an HTML 502 from a proxy is a retryable server error with readable text, not markup soup', async () => {
    const html = '<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>';
    const e = await statusError('html502', { status: 502, contentType: 'text/html', body: html });
    expect(e).toBeInstanceOf(ServerError);
    expect(e.status).toBe(502);
    expect(e.retryable).toBe(true);
    expect(e.message).toBe(
      `Unexpected response from the service at ${origin} (get-task-status): HTTP 502, an HTML page titled "502 Bad Gateway" instead of the contract's JSON.`,
    );
  });

  it('start-task and get-upload-url answers are checked too', async () => {
    answers.set('/start-task', json({ status: 'success', data: { message: 'ok', creditsToDeduct: 1 } }));
    const started: unknown = await client
      .startTask(
        { model: 'digital-art-4x', scale: 2, saveImageAs: 'png', compression: 0, enhanceFace: false },
        { kind: 'file', fileName: 'a.png', bytes: new Uint8Array([1, 2, 3]), mime: 'image/png' },
      )
      .catch((x: unknown) => x);
    expect((started as Error).message).toBe(`Unexpected response from the service at ${origin} (start-task): data.taskId: Invalid input: expected string, received undefined.`);

    answers.set('/get-upload-url', json({ status: 'success', data: { uploadId: 'u1', partUrls: 'nope' } }));
    const upload: unknown = await client.getUploadUrl({ fileSize: 10, fileType: 'image/png', originalFileName: 'a.png' }).catch((x: unknown) => x);
    expect((upload as Error).message).toContain('(get-upload-url): data.partUrls: ');
  });

  it('get-account with a wrong type is refused, a partial account is accepted', async () => {
    answers.set('/get-account', json({ status: 'success', data: { currentCredits: 'lots' } }));
    const bad: unknown = await client.getAccount().catch((x: unknown) => x);
    expect((bad as Error).message).toContain('(get-account): data.currentCredits: ');
    answers.set('/get-account', json({ status: 'success', data: { email: 'a@example.com' } }));
    expect(await client.getAccount()).toEqual({ email: 'a@example.com' });
  });
});
