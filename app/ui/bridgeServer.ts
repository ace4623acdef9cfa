/**
 * `crisp ui`'s HTTP bridge: the built renderer plus CrispService over HTTP, for a browser on this machine.
 *
 *   POST /api/<method>   body {"args":[...]} → {"result":...}; errors → {"error":"plain words","code":"unauthorized"}
 *                        (code: app/jobs/userErrors.ts ErrorCode, absent when unclassified)
 *                        (400: refused by the bridge's checks; 422: refused by the service itself)
 *   POST /api/addFile    (wire "bytesIn" in the method table) raw bytes; the name travels in
 *                        X-Crisp-File-Name (URL-encoded)
 *   POST /api/readImage  (wire "bytesOut") answers the image bytes themselves, with their MIME type
 *   GET  /api/events     Server-Sent Events, one ServiceEvent per message (subscribe)
 *   POST /links/download body {"ids":[...]} → {"url":"/download?…"}: a signed link to finished results
 *   GET  /download?…     the signed link: one result, or a zip of several, as an attachment
 *
 * Guards: binds 127.0.0.1 only; a random token (printed in the URL) is required for the page and every
 * API call; the Host header must name this server (defeats DNS rebinding); API calls need a custom
 * header, so a cross-site form or fetch cannot even reach them without a preflight we never grant.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { hasErrorCode } from '../../engine/contract/index.js';
import type { CrispService, JobItem, ServiceEvent } from '../service/crispService.js';
import { mimeOf } from '../service/resultMethods.js';
import { SERVICE_TABLE } from '../service/methodTable.js';
import { contentDisposition, createDownloadSigner, DOWNLOAD_PATH } from './downloadLinks.js';
import { uniqueNames, zipArchive } from './zipArchive.js';
import { MAX_ADD_FILE_BYTES, callServiceMethod, isServiceMethod } from '../service/serviceArgs.js';
import { SECURITY_HEADERS } from './securityHeaders.js';
import { errorCodeOf } from '../jobs/userErrors.js';
import { serveStatic } from './staticFiles.js';

export const TOKEN_HEADER = 'x-crisp-token';
export const FILE_NAME_HEADER = 'x-crisp-file-name';
const MAX_JSON_BODY = 1024 * 1024;
/** "Download all" builds its zip in memory; beyond this the person is asked to download one by one. */
const MAX_ZIP_BYTES = 2 * 2 ** 30;
const HEARTBEAT_MS = 15_000;

export interface UiServerOptions {
  service: CrispService;
  /** Folder holding the built renderer (index.html + assets/). */
  rendererDir: string;
  /** 0 (default): any free port. */
  port?: number;
  /** Tests pass a fixed token; otherwise 32 random bytes. */
  token?: string;
  /** Called once a download has been sent in full: those results are no longer only in the data folder. */
  onDownloaded?: (ids: string[]) => Promise<void>;
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
    /** app/jobs/userErrors.ts ErrorCode of a service method's failure. */
    readonly code?: string,
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
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
  });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
  });
  res.end(`${text}\n`);
}

export async function startUiServer(options: UiServerOptions): Promise<RunningUiServer> {
  const token = options.token ?? randomBytes(32).toString('base64url');
  const { service, rendererDir } = options;
  const streams = new Set<ServerResponse>();
  const signer = createDownloadSigner();
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
    if (!sameSecret(Array.isArray(headerToken) ? headerToken[0] : headerToken, token))
      throw new HttpError(403, 'Missing or wrong access token.');
    if (!isServiceMethod(method)) throw new HttpError(404, `Unknown API method "${method.slice(0, 60)}".`);

    let args: unknown;
    const wire = SERVICE_TABLE[method].wire;
    if (wire === 'bytesIn') {
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
      args =
        typeof parsed === 'object' && parsed !== null && 'args' in parsed
          ? (parsed as { args: unknown }).args
          : undefined;
    }

    let result: unknown;
    try {
      result = await callServiceMethod(service, method, args);
    } catch (e) {
      if (hasErrorCode(e, 'bad-call')) throw new HttpError(400, e.message);
      // The app layer's errors are written for the user (a refusal, not a crash): pass the message, never a stack,
      // and the stable code, so the page can word known failures in its own language.
      throw new HttpError(422, e instanceof Error ? e.message : String(e), errorCodeOf(e));
    }
    if (wire === 'bytesOut') {
      const image = result as { mime: string; bytes: Uint8Array };
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': image.mime,
        'content-length': String(image.bytes.byteLength),
        'cache-control': 'no-store',
      });
      res.end(Buffer.from(image.bytes.buffer, image.bytes.byteOffset, image.bytes.byteLength));
      return;
    }
    sendJson(res, 200, result === undefined ? {} : { result });
  }

  /** Finished results among these ids, or a refusal that names what is missing. */
  async function finishedResults(ids: unknown): Promise<JobItem[]> {
    if (
      !Array.isArray(ids) ||
      ids.length === 0 ||
      ids.length > 10_000 ||
      !ids.every((i) => typeof i === 'string' && i.length > 0 && i.length <= 200 && !i.includes(','))
    ) {
      throw new HttpError(400, 'Name the results to download.');
    }
    const items = new Map((await service.getQueue()).items.map((i) => [i.id, i]));
    return (ids as string[]).map((id) => {
      const item = items.get(id);
      if (!item) throw new HttpError(404, 'That image is no longer in the queue.');
      if (item.status !== 'done' || !item.outputPath)
        throw new HttpError(409, `${item.inputName} has no result to download yet.`);
      return item;
    });
  }

  async function handleLinkRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') throw new HttpError(405, 'Use POST to ask for a download link.');
    const headerToken = req.headers[TOKEN_HEADER];
    if (!sameSecret(Array.isArray(headerToken) ? headerToken[0] : headerToken, token))
      throw new HttpError(403, 'Missing or wrong access token.');
    let body: unknown;
    try {
      body = JSON.parse((await readBody(req, MAX_JSON_BODY)).toString('utf8'));
    } catch {
      throw new HttpError(400, 'The request body is not valid JSON.');
    }
    const items = await finishedResults((body as { ids?: unknown } | null)?.ids);
    sendJson(res, 200, { url: signer.sign(items.map((i) => i.id)) });
  }

  async function handleDownload(res: ServerResponse, url: URL): Promise<void> {
    const verdict = signer.verify(url.searchParams);
    if ('refused' in verdict) throw new HttpError(403, verdict.refused);
    const items = await finishedResults(verdict.ids);
    const files = items.map((i) => i.outputPath ?? '');
    const sizes = await Promise.all(files.map(async (f) => (await stat(f).catch(() => undefined))?.size));
    const missing = items.find((_, n) => sizes[n] === undefined);
    if (missing) throw new HttpError(410, `The result of ${missing.inputName} is no longer on disk: upscale it again.`);
    const headers = (type: string, length: number, name: string) => ({
      ...SECURITY_HEADERS,
      'content-type': type,
      'content-length': String(length),
      'content-disposition': contentDisposition(name),
      'cache-control': 'no-store',
    });
    const only = items.length === 1 ? items[0] : undefined;
    if (only) {
      // One result is streamed from disk: a 16k × 16k output never has to fit in memory.
      const file = files[0]!;
      const head = new Uint8Array(16);
      const fh = await open(file, 'r');
      try {
        await fh.read(head, 0, 16, 0);
      } finally {
        await fh.close();
      }
      res.writeHead(200, headers(mimeOf(file, head), sizes[0]!, path.basename(file)));
      await pipeline(createReadStream(file), res);
      await options.onDownloaded?.([only.id]);
      return;
    }
    // A zip is built in memory, so "Download all" has a size limit that says what to do instead.
    const total = sizes.reduce((a: number, b) => a + (b ?? 0), 0);
    if (total > MAX_ZIP_BYTES) {
      throw new HttpError(
        413,
        `These ${items.length} results add up to ${(total / 2 ** 30).toFixed(1)} GiB, more than Download all packs (${MAX_ZIP_BYTES / 2 ** 30} GiB): download them one by one.`,
      );
    }
    const names = uniqueNames(files.map((f) => path.basename(f)));
    const entries = [];
    for (const [n, file] of files.entries())
      entries.push({ name: names[n] ?? path.basename(file), bytes: new Uint8Array(await readFile(file)) });
    let body: Buffer;
    try {
      body = zipArchive(entries);
    } catch (e) {
      throw new HttpError(413, (e as Error).message);
    }
    res.writeHead(200, headers('application/zip', body.byteLength, 'crisp-results.zip'));
    await new Promise<void>((resolve) => res.end(body, resolve));
    await options.onDownloaded?.(items.map((i) => i.id));
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
        if (!allowedHosts().has(req.headers.host ?? ''))
          throw new HttpError(421, 'This server only answers on 127.0.0.1.');
        const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
        if (url.pathname.startsWith('/api/')) {
          await handleApi(req, res, url);
          return;
        }
        if (url.pathname === '/links/download') {
          await handleLinkRequest(req, res);
          return;
        }
        if (url.pathname === DOWNLOAD_PATH) {
          await handleDownload(res, url);
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
        const code = e instanceof HttpError ? e.code : undefined;
        if (req.url?.startsWith('/api/') || req.url?.startsWith('/links/'))
          sendJson(res, status, code ? { error: message, code } : { error: message });
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
