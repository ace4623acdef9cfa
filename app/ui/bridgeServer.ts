/**
 * `crisp ui`'s HTTP bridge: the built renderer plus CrispService over HTTP, for a browser on this machine.
 *
 *   POST /api/<method>   body {"args":[...]} → {"result":...}; errors → {"error":"plain words"}
 *                        (400: refused by the bridge's checks; 422: refused by the service itself)
 *   POST /api/addFile    raw bytes; the name travels in X-Crisp-File-Name (URL-encoded)
 *   POST /api/readImage  answers the image bytes themselves, with their MIME type
 *   GET  /api/events     Server-Sent Events, one ServiceEvent per message (subscribe)
 *
 * Guards: binds 127.0.0.1 only; a random token (printed in the URL) is required for the page and every
 * API call; the Host header must name this server (defeats DNS rebinding); API calls need a custom
 * header, so a cross-site form or fetch cannot even reach them without a preflight we never grant.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CrispService, ServiceEvent } from '../service/crispService.js';
import { MAX_ADD_FILE_BYTES, ServiceCallError, callServiceMethod, isServiceMethod } from './serviceArgs.js';
import { SECURITY_HEADERS } from './securityHeaders.js';
import { serveStatic } from './staticFiles.js';

export const TOKEN_HEADER = 'x-crisp-token';
export const FILE_NAME_HEADER = 'x-crisp-file-name';
const MAX_JSON_BODY = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

export interface UiServerOptions {
  service: CrispService;
  /** Folder holding the built renderer (index.html + assets/). */
  rendererDir: string;
  /** 0 (default): any free port. */
  port?: number;
  /** Tests pass a fixed token; otherwise 32 random bytes. */
  token?: string;
}

export interface RunningUiServer {
  /** The address to open, token included. */
  url: string;
  origin: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sameSecret(given: string | null | undefined, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new HttpError(413, 'The request is too large.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, 'The request is too large.');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${text}\n`);
}

export async function startUiServer(options: UiServerOptions): Promise<RunningUiServer> {
  const token = options.token ?? randomBytes(32).toString('base64url');
  const { service, rendererDir } = options;
  const streams = new Set<ServerResponse>();
  let port = 0;

  const allowedHosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`]);

  async function handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = url.pathname.slice('/api/'.length);
    if (method === 'events') {
      if (req.method !== 'GET') throw new HttpError(405, 'Use GET for events.');
      if (!sameSecret(url.searchParams.get('token'), token)) throw new HttpError(403, 'Missing or wrong access token.');
      openEventStream(req, res);
      return;
    }
    if (req.method !== 'POST') throw new HttpError(405, 'Use POST for API calls.');
    const headerToken = req.headers[TOKEN_HEADER];
    if (!sameSecret(Array.isArray(headerToken) ? headerToken[0] : headerToken, token)) throw new HttpError(403, 'Missing or wrong access token.');
    if (!isServiceMethod(method)) throw new HttpError(404, `Unknown API method "${method.slice(0, 60)}".`);

    let args: unknown;
    if (method === 'addFile') {
      const rawName = req.headers[FILE_NAME_HEADER];
      let name = '';
      try {
        name = decodeURIComponent(typeof rawName === 'string' ? rawName : '');
      } catch {
        throw new HttpError(400, 'The file name is not valid.');
      }
      const bytes = await readBody(req, MAX_ADD_FILE_BYTES);
      args = [name, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
    } else {
      const type = req.headers['content-type'] ?? '';
      if (!type.startsWith('application/json')) throw new HttpError(415, 'API calls are JSON.');
      const body = await readBody(req, MAX_JSON_BODY);
      let parsed: unknown;
      try {
        parsed = body.length ? JSON.parse(body.toString('utf8')) : { args: [] };
      } catch {
        throw new HttpError(400, 'The request body is not valid JSON.');
      }
      args = typeof parsed === 'object' && parsed !== null && 'args' in parsed ? (parsed as { args: unknown }).args : undefined;
    }

    let result: unknown;
    try {
      result = await callServiceMethod(service, method, args);
    } catch (e) {
      if (e instanceof ServiceCallError) throw new HttpError(400, e.message);
      // The app layer's errors are written for the user (a refusal, not a crash): pass the message, never a stack.
      throw new HttpError(422, e instanceof Error ? e.message : String(e));
    }
    if (method === 'readImage') {
      const image = result as { mime: string; bytes: Uint8Array };
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': image.mime, 'content-length': String(image.bytes.byteLength), 'cache-control': 'no-store' });
      res.end(Buffer.from(image.bytes.buffer, image.bytes.byteOffset, image.bytes.byteLength));
      return;
    }
    sendJson(res, 200, result === undefined ? {} : { result });
  }

  function openEventStream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 1000\n\n');
    streams.add(res);
    const send = (event: ServiceEvent) => res.write(`data: ${JSON.stringify(event)}\n\n`);
    const unsubscribe = service.subscribe(send);
    // Proxies and browsers drop idle streams; a comment line keeps it open without waking the page.
    const heartbeat = setInterval(() => res.write(': ping\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    req.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
      streams.delete(res);
    });
  }

  const server = createServer((req, res) => {
    void (async () => {
      try {
        if (!allowedHosts().has(req.headers.host ?? '')) throw new HttpError(421, 'This server only answers on 127.0.0.1.');
        const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
        if (url.pathname.startsWith('/api/')) {
          await handleApi(req, res, url);
          return;
        }
        if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'Method not allowed.');
        const isPage = url.pathname === '/' || url.pathname === '/index.html';
        if (isPage && !sameSecret(url.searchParams.get('token'), token)) {
          throw new HttpError(403, 'Open the address printed by "crisp ui": it carries the access token.');
        }
        if (!(await serveStatic(rendererDir, url.pathname, res, SECURITY_HEADERS))) {
          throw new HttpError(404, isPage ? 'The UI is not built: run "npm run build:renderer".' : 'Not found.');
        }
      } catch (e) {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        const status = e instanceof HttpError ? e.status : 500;
        const message = e instanceof Error ? e.message : String(e);
        if (req.url?.startsWith('/api/')) sendJson(res, status, { error: message });
        else sendText(res, status, message);
      }
    })();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}/?token=${token}`,
    origin,
    port,
    token,
    async close() {
      for (const s of streams) s.end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A browser keeps sockets alive; without this, close() would wait for the page to let go of them.
      server.closeAllConnections();
      await closed;
    },
  };
}
