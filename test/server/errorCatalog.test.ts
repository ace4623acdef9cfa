/**
 * One error catalog (engine/contract/errorCatalog.ts): every row's status and message reach the wire through
 * the server's real error mapping, a row without a status never does (the endpoint's spec 500 answers), and a
 * few representative rows travel the whole way — a real `crisp serve`, the remote client, the `crisp` command —
 * to the same code, sentence and exit status. The request checks are the contract's zod schemas only.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  catalogMessage,
  CrispError,
  ERROR_CATALOG,
  ERROR_CODES,
  type ErrorCode,
} from '../../engine/contract/errorCatalog.js';
import { installErrorMapping } from '../../engine/server/errorMapping.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { runCli } from '../helpers/runCli.js';
import { BIRD } from '../app/appHelpers.js';
import { addUser, FAST_MODEL, startTestServer, type TestServer } from './helpers.js';

/** A row's message as a thrower words it: its `{…}` parts filled with a recognisable detail. */
function worded(code: ErrorCode): string {
  return ERROR_CATALOG[code].message.replace(/\{(\w+)\}/g, (_, k: string) => `the ${k}`);
}

describe('every catalog row on the wire', () => {
  const app = Fastify();
  beforeAll(async () => {
    installErrorMapping(app, 1024);
    app.get<{ Params: { code: string } }>('/throw/:code', async (request) => {
      const code = request.params.code as ErrorCode;
      throw new CrispError(code, worded(code));
    });
    app.post('/start-task', { config: { endpoint: 'start-task' } }, async () => {
      throw new CrispError('disk-full', 'Cannot write /srv/crisp/tasks/x: the disk is full.');
    });
    await app.ready();
  });
  afterAll(() => app.close());

  it.each(ERROR_CODES.filter((c) => ERROR_CATALOG[c].httpStatus !== null))(
    '%s: its status and its message, as a JSON string',
    async (code) => {
      const res = await app.inject({ method: 'GET', url: `/throw/${code}` });
      expect(res.statusCode).toBe(ERROR_CATALOG[code].httpStatus);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body).toBe(JSON.stringify(worded(code)));
    },
  );

  it.each(ERROR_CODES.filter((c) => ERROR_CATALOG[c].httpStatus === null))(
    '%s: no status of its own, so the answer is a 500 that says nothing of it',
    async (code) => {
      const res = await app.inject({ method: 'GET', url: `/throw/${code}` });
      expect([res.statusCode, res.body]).toEqual([500, JSON.stringify(catalogMessage('internal'))]);
    },
  );

  it("an uncatalogued failure on a spec endpoint is that endpoint's spec 500, never its words", async () => {
    const res = await app.inject({ method: 'POST', url: '/start-task' });
    expect([res.statusCode, res.body]).toEqual([500, JSON.stringify(catalogMessage('processing-request-failed'))]);
  });

  it('each row has the exit status of the CLI: 130 for a stop, 1 for every failure', () => {
    for (const code of ERROR_CODES) {
      const expected = code === 'cancelled' || code === 'shutting-down' ? 130 : 1;
      expect([code, new CrispError(code, 'x').exitCode]).toEqual([code, expected]);
    }
  });
});

describe('the same row from server to person: crisp serve → remote client → crisp', () => {
  let server: TestServer;
  let key: string;
  let poor: string;
  beforeAll(async () => {
    server = await startTestServer({ workers: 0 });
    key = (await addUser(server, 'rich@example.com', 100)).key;
    poor = (await addUser(server, 'poor@example.com', 0)).key;
  });
  afterAll(() => server.stop());

  const upscale = (apiKey: string, extra: string[] = []) =>
    runCli(['upscale', BIRD, '--remote', server.url, '-m', FAST_MODEL, '--json', ...extra], {
      CRISP_API_KEY: apiKey,
    });

  it.each([
    ['unauthorized', 'crisp_not-a-real-key-0123456789', [] as string[]],
    ['insufficient-credits', 'POOR', []],
    ['usage', 'KEY', ['--passes', '2']],
  ] as const)('%s', async (code: ErrorCode, who, extra) => {
    const apiKey = who === 'POOR' ? poor : who === 'KEY' ? key : who;
    const r = await upscale(apiKey, [...extra]);
    const report = JSON.parse(r.stdout) as {
      results: { error: { code: string; message: string } | null }[];
      error: { code: string; message: string } | null;
    };
    const error = report.error ?? report.results[0]?.error;
    expect(error?.code).toBe(code);
    // A refusal of the server reaches the person in the server's own words: the row's message.
    if (ERROR_CATALOG[code].httpStatus !== null && code !== 'unauthorized') expect(error?.message).toBe(worded(code));
    expect(r.code).toBe(ERROR_CATALOG[code].exitCode);
  });

  it('the wire answer of those rows is the row itself', async () => {
    const res = await fetch(`${server.url}/get-upload-url`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': poor },
      body: JSON.stringify({ data: { fileSize: 10, fileType: 'image/png', originalFileName: 'a.png' } }),
    });
    expect([res.status, await res.text()]).toEqual([
      ERROR_CATALOG['insufficient-credits'].httpStatus,
      JSON.stringify(ERROR_CATALOG['insufficient-credits'].message),
    ]);
  });
});

describe('one validator', () => {
  it('the hand-written request parsers are gone: no validate.ts, nothing imports it', async () => {
    expect(existsSync(path.join(REPO_ROOT, 'engine/contract/validate.ts'))).toBe(false);
    const sources = async (dir: string): Promise<string[]> => {
      const entries = await readdir(dir, { withFileTypes: true, recursive: true });
      return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
    };
    for (const top of ['engine', 'app']) {
      for (const file of await sources(path.join(REPO_ROOT, top))) {
        expect([file, (await readFile(file, 'utf8')).includes('/validate.js')]).toEqual([file, false]);
      }
    }
  });
});
