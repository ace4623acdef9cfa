/**
 * The remote client parses every answer with the contract's schemas: a service that answers the wrong
 * shape gives one clear "unexpected response" error naming the endpoint and the field, never an
 * `undefined` further on. A fake service on loopback answers whatever each case needs.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerError } from '../../app/backends/errors.js';
import { createContractClient, type ContractClient } from '../../app/remote/contractClient.js';

let answer: { status: number; type: string; body: string } = { status: 200, type: 'application/json', body: '{}' };
let server: Server;
let client: ContractClient;
let origin: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(answer.status, { 'content-type': answer.type });
      res.end(answer.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = createContractClient({ baseUrl: origin, apiKey: 'crisp_test' });
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const json = (body: unknown, status = 200) =>
  (answer = { status, type: 'application/json', body: JSON.stringify(body) });

const STATUS = {
  status: 'PROCESSED',
  progress: '100%',
  files: [],
  deductedCredits: 1,
  creditsDeducted: true,
  model: 'digital-art-4x',
  scale: 2,
  saveImageAs: 'png',
  compression: 0,
  batchMode: false,
};

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a failure');
}

describe('remote client: every answer checked against the contract', () => {
  it('accepts a well-formed status and drops fields the contract does not know', async () => {
    json({ status: 'success', data: { ...STATUS, internalSecret: 'x' } });
    const s = await client.getTaskStatus('t1');
    expect(s).toEqual(STATUS);
  });

  it('names the endpoint and the first wrong field', async () => {
    json({ status: 'success', data: { ...STATUS, status: 'DONE' } });
    const e = await failure(client.getTaskStatus('t1'));
    expect(e).toBeInstanceOf(ServerError);
    expect(e.message).toMatch(
      new RegExp(`^Unexpected response from the service at ${origin} to get-task-status: data\\.status: `),
    );

    json({ status: 'success', data: { ...STATUS, files: [{ fileName: 'a.png' }] } });
    expect((await failure(client.getTaskStatus('t1'))).message).toContain('to get-task-status: data.files.0.');

    json({ status: 'success', data: { message: 'ok', creditsToDeduct: 1 } });
    const form = {
      model: 'digital-art-4x' as const,
      scale: 2 as const,
      saveImageAs: 'png' as const,
      compression: 0,
    };
    const started = await failure(
      client.startTask(form, { kind: 'file', fileName: 'a.png', bytes: new Uint8Array([1]), mime: 'image/png' }),
    );
    expect(started.message).toMatch(/to start-task: data\.taskId: /);

    json({ status: 'success', data: { uploadId: 'u', partUrls: 'nope' } });
    expect(
      (await failure(client.getUploadUrl({ fileSize: 10, fileType: 'image/png', originalFileName: 'a.png' }))).message,
    ).toMatch(/to get-upload-url: data\.partUrls: /);
  });

  it('turns non-JSON, a missing data object and an HTML 502 into clear errors', async () => {
    answer = { status: 200, type: 'text/html', body: '<html>hello</html>' };
    expect((await failure(client.getTaskStatus('t1'))).message).toBe(
      `The service at ${origin} answered with something that is not JSON.`,
    );
    json({ status: 'success' });
    expect((await failure(client.getTaskStatus('t1'))).message).toBe(
      `The service at ${origin} answered without a data object.`,
    );
    answer = { status: 502, type: 'text/html', body: '<html><body>Bad gateway</body></html>' };
    const e = await failure(client.getTaskStatus('t1'));
    expect(e).toBeInstanceOf(ServerError);
    expect([(e as ServerError).status, (e as ServerError).retryable, e.message]).toEqual([
      502,
      true,
      `Unexpected response from the service at ${origin} to get-task-status: HTTP 502, an HTML page.`,
    ]);
    answer = {
      status: 504,
      type: 'text/html; charset=utf-8',
      body: '<html><head><title>504 Gateway Time-out</title></head><body><h1>504</h1></body></html>',
    };
    expect((await failure(client.getTaskStatus('t1'))).message).toBe(
      `Unexpected response from the service at ${origin} to get-task-status: HTTP 504, an HTML page titled "504 Gateway Time-out".`,
    );
  });

  it('takes a partial get-account answer (an extension other services may not implement fully)', async () => {
    json({ status: 'success', data: { currentCredits: 5 } });
    expect(await client.getAccount()).toEqual({ currentCredits: 5 });
    json({ status: 'success', data: { currentCredits: 'five' } });
    expect((await failure(client.getAccount())).message).toMatch(/to get-account: data\.currentCredits: /);
  });
});
