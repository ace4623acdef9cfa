/**
 * An undici client of the upscaling contract for any base URL and API key: the four endpoints, the
 * get-account extension, part PUTs and downloads. Each call is one HTTP request; retry policy lives with
 * the callers (multipartUpload, remoteBackend), which know what is safe to repeat.
 */
import { FormData, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  loadSchemas,
  type AccountData,
  type Capabilities,
  type CompletedPart,
  type FileData,
  type GetUploadUrlRequest,
  type StartTaskResult,
  type TaskStatusData,
  type UploadSession,
} from '../../engine/contract/index.js';
import type { UpscaleSettings } from '../backends/backend.js';
import { errorFromResponse, errorFromTransport, htmlSummary } from './responseErrors.js';

/** Redirects a download may follow (to the service's bucket), and how many in a row. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 3;

export interface ContractClientOptions {
  baseUrl: string;
  apiKey: string;
  dispatcher?: Dispatcher;
  /** Per-request timeout for headers and body (a stalled connection becomes a Network error). */
  timeoutMs?: number;
}

/** The contract's zod objects every answer is checked against: loaded with the first request, not with this module. */
type Schemas = Awaited<ReturnType<typeof loadSchemas>>;

/** get-account is a Crisp extension: another service may answer only part of it. */
export type PartialAccount = Partial<AccountData>;
let partialAccount: ReturnType<Schemas['accountDataSchema']['partial']> | undefined;
const partialAccountSchema = (s: Schemas) => (partialAccount ??= s.accountDataSchema.partial());

export type StartTaskSource =
  { kind: 'file'; fileName: string; bytes: Uint8Array; mime: string } | { kind: 'files'; files: Partial<FileData>[] };

export interface ContractClient {
  readonly origin: string;
  getUploadUrl(req: GetUploadUrlRequest, signal?: AbortSignal): Promise<UploadSession>;
  putPart(signedUrl: string, bytes: Uint8Array, signal?: AbortSignal): Promise<string>;
  completeMultipartUpload(uploadId: string, key: string, parts: CompletedPart[], signal?: AbortSignal): Promise<void>;
  startTask(
    settings: UpscaleSettings,
    source: StartTaskSource,
    signal?: AbortSignal,
  ): Promise<StartTaskResult & { taskCost?: number }>;
  getTaskStatus(taskId: string, signal?: AbortSignal): Promise<TaskStatusData>;
  getAccount(signal?: AbortSignal): Promise<PartialAccount>;
  /** extension: what the service offers; a service without the endpoint answers 404 (NotFoundError). */
  getCapabilities(signal?: AbortSignal): Promise<Capabilities>;
  download(url: string, signal?: AbortSignal): Promise<{ bytes: Uint8Array; contentType?: string }>;
}

type Headers = Record<string, string | string[] | undefined>;

export function createContractClient(opts: ContractClientOptions): ContractClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const timeout = opts.timeoutMs ?? 60_000;

  async function send(
    url: string,
    init: {
      method: 'POST' | 'PUT' | 'GET';
      headers?: Record<string, string>;
      body?: string | Uint8Array | FormData;
      auth: boolean;
    },
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

  /**
   * The answer's `data`, checked against the contract's schema for this endpoint: a service that answers
   * something else fails here with a sentence naming the endpoint and the first wrong field.
   */
  function unwrap<S extends z.ZodType>(
    endpoint: string,
    schema: S,
    r: { status: number; headers: Headers; bytes: Uint8Array },
  ): z.infer<S> {
    const text = Buffer.from(r.bytes).toString('utf8');
    const html = r.status >= 400 ? htmlSummary(text, r.headers['content-type']) : undefined;
    if (html !== undefined) {
      // The HTTP status is kept, so a proxy's 502/503 stays a retryable server error.
      const page = html ? `an HTML page titled "${html}"` : 'an HTML page';
      throw errorFromResponse(
        r.status,
        JSON.stringify(`Unexpected response from the service at ${origin} to ${endpoint}: HTTP ${r.status}, ${page}.`),
        r.headers,
      );
    }
    if (r.status < 200 || r.status >= 300) throw errorFromResponse(r.status, text, r.headers);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw errorFromResponse(
        502,
        JSON.stringify(`The service at ${origin} answered with something that is not JSON.`),
        r.headers,
      );
    }
    if (!body || typeof body !== 'object' || !('data' in body)) {
      throw errorFromResponse(
        502,
        JSON.stringify(`The service at ${origin} answered without a data object.`),
        r.headers,
      );
    }
    const parsed = schema.safeParse((body as { data: unknown }).data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `data.${issue.path.join('.')}` : 'data';
      throw errorFromResponse(
        502,
        JSON.stringify(
          `Unexpected response from the service at ${origin} to ${endpoint}: ${where}: ${issue?.message ?? 'invalid'}.`,
        ),
        r.headers,
      );
    }
    return parsed.data;
  }

  const postJson = async <S extends z.ZodType>(
    route: string,
    schemaOf: (s: Schemas) => S,
    data: unknown,
    signal?: AbortSignal,
  ): Promise<z.infer<S>> =>
    unwrap(
      route,
      schemaOf(await loadSchemas()),
      await send(
        `${base}/${route}`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }), auth: true },
        signal,
      ),
    );

  return {
    origin,
    getUploadUrl: (req, signal) => postJson('get-upload-url', (s) => s.uploadSessionSchema, req, signal),

    async putPart(signedUrl, bytes, signal) {
      // Part URLs carry their own signature (spec: Authentication 4): no API key is sent to them.
      const r = await send(
        signedUrl,
        { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes, auth: false },
        signal,
      );
      // S3 and others answer the ETag as a header only; Crisp also puts it in the body.
      const header = Array.isArray(r.headers.etag) ? r.headers.etag[0] : r.headers.etag;
      const data = unwrap('a part upload', (await loadSchemas()).storedPartSchema.partial(), r);
      const etag = header ?? data.ETag;
      if (!etag)
        throw errorFromResponse(
          502,
          JSON.stringify('The service stored a part without answering its ETag.'),
          r.headers,
        );
      return etag;
    },

    async completeMultipartUpload(uploadId, key, parts, signal) {
      await postJson(
        'complete-multipart-upload',
        (s) => s.completeMultipartUploadResultSchema,
        { uploadId, key, parts },
        signal,
      );
    },

    async startTask(settings, source, signal) {
      const form = new FormData();
      form.append('model', settings.model);
      form.append('scale', String(settings.scale));
      form.append('saveImageAs', settings.saveImageAs);
      // The contract's name for the job's face: only whether it is asked for; the service picks model and strength.
      form.append('enhanceFace', String(settings.face !== undefined));
      form.append('compression', String(settings.compression));
      if (settings.denoise !== undefined) form.append('denoise', String(settings.denoise));
      if (source.kind === 'file')
        form.append(
          'file',
          new Blob([source.bytes as Uint8Array<ArrayBuffer>], { type: source.mime }),
          source.fileName,
        );
      else form.append('files', JSON.stringify(source.files));
      const r = await send(`${base}/start-task`, { method: 'POST', body: form, auth: true }, signal);
      const data = unwrap('start-task', (await loadSchemas()).startTaskResultSchema, r);
      const cost = Number(r.headers['x-task-cost']);
      return Number.isFinite(cost) ? { ...data, taskCost: cost } : data;
    },

    getTaskStatus: (taskId, signal) => postJson('get-task-status', (s) => s.taskStatusDataSchema, { taskId }, signal),
    getAccount: (signal) => postJson('get-account', partialAccountSchema, {}, signal),
    getCapabilities: (signal) => postJson('get-capabilities', (s) => s.capabilitiesSchema, {}, signal),

    async download(url, signal) {
      let target = url;
      let r: Awaited<ReturnType<typeof send>>;
      for (let hops = 0; ; hops++) {
        // Send the key only to the service's own origin: a download link elsewhere must not learn it.
        const sameOrigin = new URL(target).origin === origin;
        r = await send(target, { method: 'GET', auth: sameOrigin }, signal);
        // A service with object storage redirects to a presigned URL of its bucket (docs/deploy.md).
        const location = r.headers.location;
        if (!REDIRECTS.has(r.status) || typeof location !== 'string' || hops >= MAX_REDIRECTS) break;
        const next = new URL(location, target);
        if (next.protocol !== 'https:' && next.protocol !== 'http:') break;
        target = next.toString();
      }
      if (r.status !== 200) throw errorFromResponse(r.status, Buffer.from(r.bytes).toString('utf8'), r.headers);
      const declared = Number(r.headers['content-length']);
      if (Number.isFinite(declared) && declared !== r.bytes.length) {
        throw errorFromTransport(
          Object.assign(new Error('truncated download'), { code: 'TRUNCATED_DOWNLOAD' }),
          origin,
        );
      }
      const ct = r.headers['content-type'];
      return { bytes: r.bytes, ...(typeof ct === 'string' ? { contentType: ct } : {}) };
    },
  };
}
