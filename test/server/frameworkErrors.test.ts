/**
 * Every framework error a client can trigger — the HTTP parser, the router, the content-type parsers and
 * the multipart plugin — answers in the contract's shape (a JSON string body with a specific message),
 * never Fastify's own `{"error":…,"code":"FST_…","statusCode":…}` object. Raw sockets, so the bytes on
 * the wire are exactly the ones listed.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, BASIC, startTestServer, type TestServer } from './helpers.js';
import { BOUNDARY } from './rawHttp.js';

let s: TestServer;
let key: string;
let port: number;

beforeAll(async () => {
  s = await startTestServer({ serverLimits: { headersTimeoutMs: 600, requestTimeoutMs: 1_200 } });
  key = (await addUser(s, 'framework@example.com', 10)).key;
  port = Number(new URL(s.url).port);
});
afterAll(async () => {
  await s?.stop();
});

interface Exchange {
  status: number;
  /** The parsed body: a string for a contract error. */
  body: unknown;
  raw: string;
}

/** Writes `request` as given and reads one answer (to its Content-Length, or to the close). */
function exchange(request: string | Buffer): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(request));
    let raw = Buffer.alloc(0);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(bound);
      socket.destroy();
      const text = raw.toString('utf8');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      const bodyText = text.slice(text.indexOf('\r\n\r\n') + 4);
      let body: unknown;
      try {
        body = JSON.parse(bodyText);
      } catch {
        body = bodyText;
      }
      resolve({ status: Number(m[1]), body, raw: text });
    };
    socket.on('data', (d: Buffer) => {
      raw = Buffer.concat([raw, d]);
      const text = raw.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, end));
      if (end >= 0 && len && raw.length >= end + 4 + Number(len[1])) finish();
    });
    socket.on('close', finish);
    socket.on('error', () => undefined);
    // Bounds a hang only.
    const bound = setTimeout(finish, 20_000);
  });
}

const post = (route: string, type: string, body: string, extra = '') =>
  `POST ${route} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: ${type}\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
const get = (route: string) => `GET ${route} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;
const multipart = (parts: [string, string][]) =>
  parts.map(([k, v]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') +
  `--${BOUNDARY}--\r\n`;
const TASK = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9';

const cases: { name: string; request: () => string | Buffer; status: number; message: RegExp }[] = [
  {
    name: 'invalid JSON (FST_ERR_CTP_INVALID_JSON_BODY)',
    request: () => post('/get-task-status', 'application/json', '{"data": {'),
    status: 400,
    message: /^Bad Request: the body is not valid JSON$/,
  },
  {
    name: 'empty JSON body (FST_ERR_CTP_EMPTY_JSON_BODY)',
    request: () => post('/get-task-status', 'application/json', ''),
    status: 400,
    message: /^Bad Request: the body is empty/,
  },
  {
    name: 'a __proto__ key (secure-json-parse)',
    request: () =>
      post('/get-task-status', 'application/json', `{"data": {"taskId": "${TASK}"}, "__proto__": {"x": 1}}`),
    status: 400,
    message: /^Bad Request: the body holds a forbidden key \(__proto__ or constructor\.prototype\)$/,
  },
  {
    // The parser's fast path skips bodies that cannot spell the key; an escaped spelling must not slip through.
    name: 'a __proto__ key spelled with \\u escapes',
    request: () =>
      post(
        '/get-task-status',
        'application/json',
        `{"data": {"taskId": "${TASK}"}, "\\u005f_pro\\u0074o__": {"x": 1}}`,
      ),
    status: 400,
    message: /^Bad Request: the body holds a forbidden key \(__proto__ or constructor\.prototype\)$/,
  },
  {
    name: 'a constructor.prototype key',
    request: () =>
      post('/get-task-status', 'application/json', `{"data": {"taskId": "${TASK}", "constructor": {"prototype": {}}}}`),
    status: 400,
    message: /^Bad Request: the body holds a forbidden key \(__proto__ or constructor\.prototype\)$/,
  },
  {
    name: 'a body over the limit (FST_ERR_CTP_BODY_TOO_LARGE)',
    request: () => post('/get-task-status', 'application/json', `{"data": "${'x'.repeat(1_100_000)}"}`),
    status: 413,
    message: /^Payload Too Large: the request body exceeds the limit of 1048576 bytes$/,
  },
  {
    name: 'an unsupported Content-Type (FST_ERR_CTP_INVALID_MEDIA_TYPE)',
    request: () => post('/get-task-status', 'text/plain', 'hello'),
    status: 400,
    message: /^Bad Request: unsupported Content-Type: send application\/json$/,
  },
  {
    name: 'an unsupported Content-Type on start-task',
    request: () => post('/start-task', 'text/plain', 'hello'),
    status: 400,
    message: /^Bad Request: start-task takes multipart\/form-data \(or application\/x-www-form-urlencoded/,
  },
  {
    name: 'a malformed percent-encoding (FST_ERR_BAD_URL)',
    request: () => get(`/downloads/${TASK}/%E0%A4%A`),
    status: 400,
    message: /^Bad Request: the URL is malformed/,
  },
  {
    name: 'an over-long path segment (FST_ERR_MAX_PARAM_LENGTH)',
    request: () => get(`/downloads/${TASK}/${'a'.repeat(5_000)}.png`),
    status: 414,
    message: /^URI Too Long: a segment of the URL is longer than \d+ characters$/,
  },
  {
    name: 'an unknown route',
    request: () => get('/no-such-route'),
    status: 404,
    message: /^Not Found$/,
  },
  {
    name: 'a known path with another method',
    request: () => `PUT /get-task-status HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    status: 404,
    message: /^Not Found$/,
  },
  {
    name: 'a multipart field named __proto__ (FST_PROTO_VIOLATION)',
    request: () =>
      post(
        '/start-task',
        `multipart/form-data; boundary=${BOUNDARY}`,
        multipart([['__proto__', 'x'], ...Object.entries(BASIC)]),
      ),
    status: 400,
    message: /^Bad Request: forbidden field name in the form$/,
  },
  {
    name: 'too many multipart fields (FST_FIELDS_LIMIT)',
    request: () =>
      post(
        '/start-task',
        `multipart/form-data; boundary=${BOUNDARY}`,
        multipart(Array.from({ length: 40 }, (_, i) => [`f${i}`, 'x'] as [string, string])),
      ),
    status: 400,
    message: /^Bad Request: too many form fields$/,
  },
  {
    name: 'malformed HTTP (HTTP parser, clientError)',
    request: () => 'GARBAGE /\r\n\r\n',
    status: 400,
    message: /^Bad Request: the request is not valid HTTP\/1\.1$/,
  },
  {
    name: 'headers over the parser limit (HPE_HEADER_OVERFLOW)',
    request: () => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    status: 431,
    message: /^Request Header Fields Too Large/,
  },
  {
    name: 'headers that never end (ERR_HTTP_REQUEST_TIMEOUT)',
    request: () => `POST /get-task-status HTTP/1.1\r\nHost: x\r\n`,
    status: 408,
    message: /^Request Timeout: /,
  },
];

describe('framework errors answer in the contract shape', () => {
  it.each(cases)('$name', async ({ request, status, message }) => {
    const r = await exchange(request());
    expect(r.status, r.raw.slice(0, 300)).toBe(status);
    expect(typeof r.body, r.raw.slice(0, 300)).toBe('string');
    expect(r.body).toMatch(message);
    expect(r.raw).not.toMatch(/FST_|"statusCode"/);
  });
});
