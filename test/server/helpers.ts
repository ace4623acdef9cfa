/** Shared helpers of the server tests: a real server on loopback, real HTTP (undici), real models. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { FormData, request } from 'undici';
import { startServer, type RunningServer, type ServerOverrides } from '../../engine/server/start.js';
import type { ServerConfig } from '../../engine/server/options.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

export const SET5 = path.join(IMAGES_DIR, 'set5');
export const FAST_MODEL = 'digital-art-4x';

export interface TestServer extends RunningServer {
  dataDir: string;
  logs: () => string;
  stop(): Promise<void>;
}

export async function tempDir(prefix = 'crisp-server-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/**
 * Error lines (pino level ≥ 50) of a test server also go to stderr, so a red CI run shows why the server
 * answered 500 without rerunning it (the log is otherwise only in memory, gone with the test process).
 */
function echoErrors(text: string): void {
  for (const line of text.split('\n')) {
    if (!line.includes('"level":5') && !line.includes('"level":6')) continue;
    try {
      const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string; stack?: string } };
      if ((entry.level ?? 0) < 50) continue;
      const stack = entry.err?.stack?.split('\n').slice(0, 6).join('\n') ?? entry.err?.message ?? '';
      process.stderr.write(`[test server error] ${entry.msg ?? ''} ${stack}\n`);
    } catch {
      // not a JSON log line
    }
  }
}

export async function startTestServer(
  config: Partial<ServerConfig> = {},
  overrides: ServerOverrides = {},
): Promise<TestServer> {
  const dataDir = config.dataDir ?? (await tempDir());
  const chunks: string[] = [];
  const logStream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const text = chunk.toString('utf8');
      chunks.push(text);
      echoErrors(text);
      cb();
    },
  });
  const server = await startServer(
    {
      host: '127.0.0.1',
      port: 0,
      allowPrivateUrls: false,
      modelDirs: [ONNX_DIR],
      logLevel: 'info',
      logStream,
      ...config,
      dataDir,
    },
    overrides,
  );
  return {
    ...server,
    dataDir,
    logs: () => chunks.join(''),
    async stop() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Parsed JSON body (error bodies are JSON strings). */
  json: unknown;
}

async function answer(res: Awaited<ReturnType<typeof request>>): Promise<HttpAnswer> {
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export async function postJson(
  base: string,
  route: string,
  key: string | undefined,
  body: unknown,
  rawBody?: string,
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== undefined) headers['x-api-key'] = key;
  return answer(await request(`${base}${route}`, { method: 'POST', headers, body: rawBody ?? JSON.stringify(body) }));
}

export async function postForm(base: string, key: string | undefined, form: FormData): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers['x-api-key'] = key;
  return answer(await request(`${base}/start-task`, { method: 'POST', headers, body: form }));
}

export async function httpGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: HttpAnswer['headers']; bytes: Buffer }> {
  const res = await request(url, { method: 'GET', headers });
  return { status: res.statusCode, headers: res.headers, bytes: Buffer.from(await res.body.arrayBuffer()) };
}

export async function httpPut(url: string, bytes: Uint8Array): Promise<HttpAnswer> {
  return answer(
    await request(url, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/octet-stream' } }),
  );
}

export function taskForm(
  fields: Record<string, string>,
  files: { name: string; fileName: string; bytes: Uint8Array }[] = [],
): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const f of files) form.append(f.name, new Blob([f.bytes]), f.fileName);
  return form;
}

export const BASIC = { model: FAST_MODEL, scale: '2', saveImageAs: 'png', enhanceFace: 'false' } as const;

export async function addUser(
  server: RunningServer,
  email: string,
  credits: number,
  extraCredits = 0,
): Promise<{ key: string; userId: string }> {
  const { account, apiKey } = await server.accounts.addUser({ email, credits, extraCredits });
  return { key: apiKey, userId: account.userId };
}

export interface StatusData {
  status: string;
  progress: string;
  files: {
    fileName: string;
    downloadLink: string;
    dimensions: { width: number; height: number };
    fileSize: number;
    fileType: string;
    createdAt: number;
  }[];
  deductedCredits: number;
  creditsDeducted: boolean;
  error?: string;
}

export async function pollStatus(base: string, key: string, taskId: string, timeoutMs = 120_000): Promise<StatusData> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await postJson(base, '/get-task-status', key, { data: { taskId } });
    if (r.status !== 200) throw new Error(`status poll answered ${r.status} ${r.text}`);
    const data = (r.json as { data: StatusData }).data;
    if (data.status === 'PROCESSED' || data.status === 'PROCESSING_FAILED') return data;
    if (Date.now() > until) throw new Error(`task ${taskId} still ${data.status}`);
    await new Promise((res) => setTimeout(res, 150));
  }
}

export function dataOf<T>(a: HttpAnswer): T {
  return (a.json as { data: T }).data;
}
