/**
 * HTTP server benchmark (merged into `npm run bench`; also runnable alone:
 * `node --import tsx test/bench/serverBench.ts`). A real server on loopback, spoken to with undici:
 *   get-task-status   requests/s and p99 latency, 64 concurrent clients polling one finished task
 *   multipart upload  MB/s of a 64 MiB upload (parts PUT 4 at a time, then complete-multipart-upload)
 * Client and server share this machine's cores, so figures are a floor for a dedicated server.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FormData, Pool } from 'undici';
import { startServer } from '../../engine/server/start.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

export interface ServerBenchRow {
  name: string;
  value: number;
  unit: string;
  note: string;
}

const CLIENTS = 64;
const STATUS_SECONDS = Number(process.env.CRISP_BENCH_QUICK ? 2 : 5);
const UPLOAD_BYTES = 64 * 1024 * 1024;

export async function runServerBench(): Promise<ServerBenchRow[]> {
  const dataDir = await import('node:fs/promises').then((fs) => fs.mkdtemp(path.join(os.tmpdir(), 'crisp-bench-server-')));
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    allowPrivateUrls: false,
    modelDirs: [ONNX_DIR],
    logLevel: 'warn',
    serverLimits: { rateLimitMax: 10_000_000 },
    engineLimits: { maxFileSize: 256 * 1024 * 1024 },
  });
  const pool = new Pool(server.url, { connections: CLIENTS, pipelining: 1 });
  try {
    const { apiKey } = await server.accounts.addUser({ email: 'bench@example.com', credits: 1_000_000 });
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const post = async (route: string, body: unknown) => {
      const r = await pool.request({ path: route, method: 'POST', headers, body: JSON.stringify(body) });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`${route}: ${r.statusCode} ${text}`);
      return JSON.parse(text) as { data: Record<string, unknown> };
    };

    // A finished task to poll (the first poll settles it; the bench measures the steady state).
    const form = new FormData();
    for (const [k, v] of Object.entries({ model: 'digital-art-4x', scale: '1', saveImageAs: 'png', enhanceFace: 'false' })) form.append(k, v);
    form.append('file', new Blob([await readFile(path.join(IMAGES_DIR, 'set5', 'butterfly.png'))]), 'butterfly.png');
    const started = await pool.request({ path: '/start-task', method: 'POST', headers: { 'x-api-key': apiKey }, body: form });
    const taskId = ((await started.body.json()) as { data: { taskId: string } }).data.taskId;
    await server.engine.idle();
    await post('/get-task-status', { data: { taskId } });

    const statusBody = JSON.stringify({ data: { taskId } });
    const latencies: number[] = [];
    const until = performance.now() + STATUS_SECONDS * 1000;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < until) {
          const s = performance.now();
          const r = await pool.request({ path: '/get-task-status', method: 'POST', headers, body: statusBody });
          await r.body.dump();
          if (r.statusCode !== 200) throw new Error(`status poll answered ${r.statusCode}`);
          latencies.push(performance.now() - s);
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0;

    // Multipart: PNG magic + random bytes (complete-multipart-upload checks the magic, not the pixels).
    const file = randomBytes(UPLOAD_BYTES);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(file);
    const u0 = performance.now();
    const session = (await post('/get-upload-url', { data: { fileSize: file.length, fileType: 'image/png', originalFileName: 'bench.png' } })).data as {
      uploadId: string;
      path: string;
      partSize: number;
      partUrls: { partNumber: number; signedUrl: string }[];
    };
    const parts: { PartNumber: number; ETag: string }[] = [];
    const queue = [...session.partUrls];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let p = queue.shift(); p; p = queue.shift()) {
          const u = new URL(p.signedUrl);
          const chunk = file.subarray((p.partNumber - 1) * session.partSize, p.partNumber * session.partSize);
          const r = await pool.request({ path: u.pathname + u.search, method: 'PUT', body: chunk });
          await r.body.dump();
          if (r.statusCode !== 200) throw new Error(`part ${p.partNumber}: ${r.statusCode}`);
          parts.push({ PartNumber: p.partNumber, ETag: String(r.headers.etag) });
        }
      }),
    );
    await post('/complete-multipart-upload', { data: { uploadId: session.uploadId, key: session.path, parts } });
    const uploadS = (performance.now() - u0) / 1000;

    return [
      { name: 'get-task-status', value: Math.round(latencies.length / elapsed), unit: 'req/s', note: `${CLIENTS} concurrent clients, ${STATUS_SECONDS}s, loopback` },
      { name: 'get-task-status p99', value: Number(p99.toFixed(1)), unit: 'ms', note: `${latencies.length} requests` },
      {
        name: 'multipart upload',
        value: Number((file.length / 1048576 / uploadS).toFixed(1)),
        unit: 'MB/s',
        note: `${file.length / 1048576} MiB in ${session.partUrls.length} parts (4 in flight) + complete, loopback`,
      },
    ];
  } finally {
    await pool.close();
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const rows = await runServerBench();
  for (const r of rows) process.stdout.write(`${r.name.padEnd(22)} ${String(r.value).padStart(10)} ${r.unit.padEnd(6)} ${r.note}\n`);
}
