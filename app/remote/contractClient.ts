/**
 * An undici client of the upscaling contract for any base URL and API key: the four endpoints, the
 * get-account extension, part PUTs and downloads. Each call is one HTTP request; retry policy lives with
 * the callers (multipartUpload, remoteBackend), which know what is safe to repeat.
 */
import { FormData, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  describeIssue,
  partUploadResultSchema,
  RESPONSE_SCHEMAS,
  successEnvelopeSchema,
  type AccountData,
  type CompletedPart,
  type FileData,
  type GetUploadUrlRequest,
  type ResponseData,
  type ResponseRoute,
  type StartTaskResult,
  type TaskStatusData,
  type UploadSession,
} from '../../engine/contract/index.js';
import type { UpscaleSettings } from '../backends/backend.js';
import { errorFromResponse, errorFromTransport, htmlSummary } from './responseErrors.js';

export interface ContractClientOptions {
  baseUrl: string;
  apiKey: string;
  dispatcher?: Dispatcher;
  /** Per-request timeout for headers and body (a stalled connection becomes a Network error). */
  timeoutMs?: number;
}

export type { AccountData };

export type StartTaskSource =
  | { kind: 'file'; fileName: string; bytes: Uint8Array; mime: string }
  | { kind: 'files'; files: Partial<FileData>[] };

export interface ContractClient {
  readonly origin: string;
  getUploadUrl(req: GetUploadUrlRequest, signal?: AbortSignal): Promise<UploadSession>;
  putPart(signedUrl: string, bytes: Uint8Array, signal?: AbortSignal): Promise<string>;
  completeMultipartUpload(uploadId: string, key: string, parts: CompletedPart[], signal?: AbortSignal): Promise<void>;
  startTask(settings: UpscaleSettings, source: StartTaskSource, signal?: AbortSignal): Promise<StartTaskResult & { taskCost?: number }>;
  getTaskStatus(taskId: string, signal?: AbortSignal): Promise<TaskStatusData>;
  getAccount(signal?: AbortSignal): Promise<AccountData>;
  download(url: string, signal?: AbortSignal): Promise<{ bytes: Uint8Array; contentType?: string }>;
}

type Headers = Record<string, string | string[] | undefined>;

export function createContractClient(opts: ContractClientOptions): ContractClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const timeout = opts.timeoutMs ?? 60_000;

  async function send(
    url: string,
    init: { method: 'POST' | 'PUT' | 'GET'; headers?: Record<string, string>; body?: string | Uint8Array | FormData; auth: boolean },
    signal?: AbortSignal,
  ): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.auth) headers['x-api-key'] = opts.apiKey;
    try {
      const res = await request(url, {
        method: init.method,
        headers,
        body: init.body,
        signal,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
      });
      const bytes = new Uint8Array(await res.body.arrayBuffer());
      return { status: res.statusCode, headers: res.headers, bytes };
    } catch (e) {
      throw errorFromTransport(e, origin, signal);
    }
  }

  /** Any answer that is not the contract's: one clear sentence naming the service, the endpoint and what was wrong. */
  function unexpected(what: string, detail: string, headers: Headers): never {
    throw errorFromResponse(502, JSON.stringify(`Unexpected response from the service at ${origin} (${what}): ${detail}.`), headers);
  }

  /** Checks the status, parses JSON, unwraps the success envelope and validates `data` with `schema`. */
  function unwrap<T>(what: string, schema: z.ZodType<T>, r: { status: number; headers: Headers; bytes: Uint8Array }): T {
    const text = Buffer.from(r.bytes).toString('utf8');
    const html = htmlSummary(text, r.headers['content-type']);
    if (html !== undefined) {
      // Keep the HTTP status so a proxy's 502/503 stays a retryable server error.
      const detail = `HTTP ${r.status}, an HTML page${html ? ` titled "${html}"` : ''} instead of the contract's JSON`;
      throw errorFromResponse(r.status >= 400 ? r.status : 502, JSON.stringify(`Unexpected response from the service at ${origin} (${what}): ${detail}.`), r.headers);
    }
    if (r.status < 200 || r.status >= 300) throw errorFromResponse(r.status, text, r.headers);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      const ct = r.headers['content-type'];
      return unexpected(what, `not JSON${typeof ct === 'string' ? ` (${ct.split(';')[0]})` : ''}`, r.headers);
    }
    const envelope = successEnvelopeSchema.safeParse(body);
    if (!envelope.success) return unexpected(what, `not a {"status": "success", "data": …} object (${describeIssue(envelope.error)})`, r.headers);
    const data = schema.safeParse(envelope.data.data);
    if (!data.success) return unexpected(what, `data.${describeIssue(data.error)}`, r.headers);
    return data.data;
  }

  const postJson = async <R extends ResponseRoute>(route: R, data: unknown, signal?: AbortSignal): Promise<ResponseData[R]> =>
    unwrap(
      route,
      // TypeScript cannot follow a key-indexed schema to its output type; ResponseData is that mapping.
      RESPONSE_SCHEMAS[route] as unknown as z.ZodType<ResponseData[R]>,
      await send(
        `${base}/${route}`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }), auth: true },
        signal,
      ),
    );

  return {
    origin,
    getUploadUrl: async (req, signal): Promise<UploadSession> => postJson('get-upload-url', req, signal),

    async putPart(signedUrl, bytes, signal) {
      // Part URLs carry their own signature (spec: Authentication 4): no API key is sent to them.
      const r = await send(signedUrl, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes, auth: false }, signal);
      if (r.status < 200 || r.status >= 300) throw errorFromResponse(r.status, Buffer.from(r.bytes).toString('utf8'), r.headers);
      const header = Array.isArray(r.headers.etag) ? r.headers.etag[0] : r.headers.etag;
      const etag = header ?? unwrap('part upload', partUploadResultSchema, r).ETag;
      if (!etag) throw errorFromResponse(502, JSON.stringify('The service stored a part without answering its ETag.'), r.headers);
      return etag;
    },

    async completeMultipartUpload(uploadId, key, parts, signal) {
      await postJson('complete-multipart-upload', { uploadId, key, parts }, signal);
    },

    async startTask(settings, source, signal) {
      const form = new FormData();
      form.append('model', settings.model);
      form.append('scale', String(settings.scale));
      form.append('saveImageAs', settings.saveImageAs);
      form.append('enhanceFace', String(settings.enhanceFace));
      form.append('compression', String(settings.compression));
      if (settings.denoise !== undefined) form.append('denoise', String(settings.denoise));
      if (source.kind === 'file') form.append('file', new Blob([source.bytes], { type: source.mime }), source.fileName);
      else form.append('files', JSON.stringify(source.files));
      const r = await send(`${base}/start-task`, { method: 'POST', body: form, auth: true }, signal);
      const data: StartTaskResult = unwrap('start-task', RESPONSE_SCHEMAS['start-task'], r);
      const cost = Number(r.headers['x-task-cost']);
      return Number.isFinite(cost) ? { ...data, taskCost: cost } : data;
    },

    getTaskStatus: async (taskId, signal): Promise<TaskStatusData> => postJson('get-task-status', { taskId }, signal),
    getAccount: (signal) => postJson('get-account', {}, signal),

    async download(url, signal) {
      // Send the key only to the service's own origin: a download link elsewhere must not learn it.
      const sameOrigin = new URL(url).origin === origin;
      const r = await send(url, { method: 'GET', auth: sameOrigin }, signal);
      if (r.status !== 200) throw errorFromResponse(r.status, Buffer.from(r.bytes).toString('utf8'), r.headers);
      const declared = Number(r.headers['content-length']);
      if (Number.isFinite(declared) && declared !== r.bytes.length) {
        throw errorFromTransport(Object.assign(new Error('truncated download'), { code: 'TRUNCATED_DOWNLOAD' }), origin);
      }
      const ct = r.headers['content-type'];
      return { bytes: r.bytes, ...(typeof ct === 'string' ? { contentType: ct } : {}) };
    },
  };
}
