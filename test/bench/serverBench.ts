/**
 * HTTP server benchmark (`npm run bench -- --only server`; also alone: `node --import tsx test/bench/serverBench.ts`).
 *
 * Measured honestly: `crisp serve` runs as its own process with its default flags (only --rate-limit is
 * raised so the limiter stays on but never answers 429), and a bare Node `http` server (bareServer.ts,
 * the minimum each path needs) runs as another process in the same run. Both are driven by the same
 * 64-connection undici client from this process:
 *   get-task-status   req/s, p50, p99 with 64 concurrent pollers of one finished task
 *   multipart upload  MB/s of a 64 MiB upload (crisp's part size, 4 parts in flight, then complete)
 *   log volume        bytes crisp writes to stdout per 1000 status polls at the default log level
 *   server CPU        user+sys CPU of each server process per request (status) or per GiB (upload), read
 *                     from /proc: the figure least disturbed by other load on a shared machine
 *   status under load one other client's status polls (one connection, every 50 ms): p99 and max while a
 *                     16.7 MP task (1024² ×4) runs in the same crisp serve, against the same server idle
 *                     just before (crisp column: during the task; bare column: idle; issue 25)
 * Client and servers share this machine's cores (and, on a shared machine, other people's load), so
 * read the ratios (crisp ÷ bare, same run), not the absolute figures. Each figure is the best of
 * ROUNDS alternating rounds, which filters out bursts of outside load.
 * CRISP_BENCH_CPU_PROF=<dir> runs crisp serve under `node --cpu-prof` (profile written at exit);
 * CRISP_BENCH_SERVER_ONLY=status|upload measures one path only (a profile of that path alone).
 * CRISP_BENCH_NODE_FLAGS='--flag …' starts crisp serve under those Node/V8 flags (GC experiments; see docs/benchmarks.md).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { Agent, FormData } from 'undici';
import { IMAGES_DIR, ONNX_DIR, REPO_ROOT } from '../helpers/paths.js';

export interface ServerBenchRow {
  name: string;
  crisp: number;
  bare: number;
  unit: string;
  /** crisp ÷ bare for throughputs, crisp ÷ bare for latencies too (lower is better there). */
  ratio: string;
  note: string;
}

const CLIENTS = 64;
const QUICK = process.env.CRISP_BENCH_QUICK === '1';
const STATUS_SECONDS = QUICK ? 2 : 5;
const ROUNDS = QUICK ? 1 : 2;
/** An upload round is a quarter of a second: more rounds than the status figure's, for the same confidence. */
const UPLOAD_ROUNDS = QUICK ? 1 : 6;
const UPLOAD_BYTES = 64 * 1024 * 1024;
const PART_SIZE = 5 * 1024 * 1024;
const CRISP = path.join(REPO_ROOT, 'bin', 'crisp.js');
const LOADED_POLL_MS = 50;

interface Spawned {
  child: ChildProcess;
  url: string;
  /** Bytes the process has written to stdout after its "listening" line. */
  outBytes(): number;
}

/** Starts a process and resolves once it prints `listening on <url>`. */
export function startProcess(args: string[], label: string): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let head = '';
    let url = '';
    let bytes = 0;
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
    child.stdout?.on('data', (c: Buffer) => {
      if (url) {
        bytes += c.length;
        return;
      }
      head += c.toString();
      const m = /listening on (\S+)\n([\s\S]*)$/.exec(head);
      if (m) {
        url = m[1]!;
        bytes = Buffer.byteLength(m[2]!);
        resolve({ child, url, outBytes: () => bytes });
      }
    });
    child.once('exit', (code) => {
      if (!url) reject(new Error(`${label} exited (${code}) before listening: ${err || head}`));
    });
  });
}

export async function stopProcess(p: Spawned): Promise<void> {
  if (p.child.exitCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await exited;
}

interface StatusFigures {
  reqPerS: number;
  p50: number;
  p99: number;
  requests: number;
  /** Server CPU (user + system) per request, in µs: robust to other load on the machine, unlike req/s. */
  cpuUs: number;
}

/** CPU seconds (user + system) a process has used so far; NaN where /proc is not available. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return Number.NaN;
  }
}

async function pollStatus(
  agent: Agent,
  origin: string,
  headers: Record<string, string>,
  body: string,
  seconds: number,
  pid?: number,
): Promise<StatusFigures> {
  const latencies: number[] = [];
  const cpu0 = cpuSeconds(pid);
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        const s = performance.now();
        const r = await agent.request({ origin, path: '/get-task-status', method: 'POST', headers, body });
        await r.body.dump();
        if (r.statusCode !== 200) throw new Error(`status poll answered ${r.statusCode}`);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  const cpuUs = ((cpuSeconds(pid) - cpu0) / latencies.length) * 1e6;
  return { reqPerS: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), requests: latencies.length, cpuUs };
}

/** PUTs every part (4 in flight) to the URLs given, then runs `complete`; answers MB/s. */
async function upload(
  agent: Agent,
  file: Buffer,
  partUrls: string[],
  complete: (etags: string[]) => Promise<void>,
  pid?: number,
): Promise<{ mbPerS: number; cpuSPerGiB: number }> {
  const t0 = performance.now();
  const cpu0 = cpuSeconds(pid);
  const etags: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = next++; i < partUrls.length; i = next++) {
        const u = new URL(partUrls[i]!);
        const chunk = file.subarray(i * PART_SIZE, (i + 1) * PART_SIZE);
        const r = await agent.request({ origin: u.origin, path: u.pathname + u.search, method: 'PUT', body: chunk });
        const text = await r.body.text();
        if (r.statusCode !== 200) throw new Error(`part ${i + 1}: ${r.statusCode} ${text}`);
        etags[i] = String(r.headers.etag);
      }
    }),
  );
  await complete(etags);
  return {
    mbPerS: file.length / 1048576 / ((performance.now() - t0) / 1000),
    cpuSPerGiB: ((cpuSeconds(pid) - cpu0) * 1073741824) / file.length,
  };
}

/** One client polling back-to-back with a pause, until `stop()` is true; answers sorted latencies (ms). */
async function lightPolls(
  agent: Agent,
  origin: string,
  headers: Record<string, string>,
  body: string,
  stop: () => boolean,
): Promise<number[]> {
  const latencies: number[] = [];
  while (!stop()) {
    const s = performance.now();
    const r = await agent.request({ origin, path: '/get-task-status', method: 'POST', headers, body });
    await r.body.dump();
    if (r.statusCode !== 200) throw new Error(`status poll answered ${r.statusCode}`);
    latencies.push(performance.now() - s);
    await new Promise((res) => setTimeout(res, LOADED_POLL_MS));
  }
  return latencies.sort((a, b) => a - b);
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;

export async function runServerBench(): Promise<ServerBenchRow[]> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-bench-server-'));
  const bareDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-bench-bare-'));
  const agent = new Agent({ connections: CLIENTS, pipelining: 1 });
  let crisp: Spawned | undefined;
  let bare: Spawned | undefined;
  try {
    const added = execFileSync(
      process.execPath,
      [CRISP, 'users', 'add', '--data', dataDir, '--email', 'bench@example.com', '--credits', '1000000'],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      },
    );
    const apiKey = added.trim().split('\n').pop()!.trim();
    const prof = process.env.CRISP_BENCH_CPU_PROF;
    const nodeFlags = [
      ...(prof ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(prof)] : []),
      ...(process.env.CRISP_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ];
    crisp = await startProcess(
      [
        ...nodeFlags,
        CRISP,
        'serve',
        '--data',
        dataDir,
        '--port',
        '0',
        '--models-dir',
        ONNX_DIR,
        '--rate-limit',
        '1000000000',
      ],
      'crisp serve',
    );
    bare = await startProcess(
      ['--import', 'tsx', path.join(REPO_ROOT, 'test', 'bench', 'bareServer.ts'), bareDir],
      'bare server',
    );
    const crispOrigin = crisp.url;
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const post = async (route: string, body: unknown) => {
      const r = await agent.request({
        origin: crispOrigin,
        path: route,
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`${route}: ${r.statusCode} ${text}`);
      return { text, json: JSON.parse(text) as { data: Record<string, unknown> } };
    };

    // A finished task to poll; the first poll after PROCESSED settles it, the bench measures the steady state.
    const form = new FormData();
    for (const [k, v] of Object.entries({
      model: 'digital-art-4x',
      scale: '1',
      saveImageAs: 'png',
      enhanceFace: 'false',
    }))
      form.append(k, v);
    form.append('file', new Blob([await readFile(path.join(IMAGES_DIR, 'set5', 'butterfly.png'))]), 'butterfly.png');
    const started = await agent.request({
      origin: crispOrigin,
      path: '/start-task',
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      body: form,
    });
    const startedText = await started.body.text();
    if (started.statusCode !== 200) throw new Error(`start-task: ${started.statusCode} ${startedText}`);
    const taskId = (JSON.parse(startedText) as { data: { taskId: string } }).data.taskId;
    let statusText = '';
    for (let i = 0; i < 600; i++) {
      const s = await post('/get-task-status', { data: { taskId } });
      statusText = s.text;
      if (s.json.data.status === 'PROCESSED') break;
      if (s.json.data.status === 'PROCESSING_FAILED') throw new Error(`bench task failed: ${statusText}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const statusBody = JSON.stringify({ data: { taskId } });

    const file = randomBytes(UPLOAD_BYTES);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(file); // complete checks the magic, not the pixels
    const parts = Math.ceil(UPLOAD_BYTES / PART_SIZE);
    const crispUpload = async () => {
      const session = (
        await post('/get-upload-url', {
          data: { fileSize: file.length, fileType: 'image/png', originalFileName: 'bench.png' },
        })
      ).json.data as {
        uploadId: string;
        path: string;
        partSize: number;
        partUrls: { partNumber: number; signedUrl: string }[];
      };
      if (session.partSize !== PART_SIZE)
        throw new Error(`crisp chose parts of ${session.partSize} bytes; the bench assumes ${PART_SIZE}`);
      return upload(
        agent,
        file,
        session.partUrls.map((p) => p.signedUrl),
        async (etags) => {
          await post('/complete-multipart-upload', {
            data: {
              uploadId: session.uploadId,
              key: session.path,
              parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })),
            },
          });
        },
        crisp!.child.pid,
      );
    };
    const bareUpload = () =>
      upload(
        agent,
        file,
        Array.from({ length: parts }, (_, i) => `${bare!.url}/uploads/bench/parts/${i + 1}`),
        async () => {
          const r = await agent.request({
            origin: bare!.url,
            path: '/complete-multipart-upload',
            method: 'POST',
            body: '{}',
          });
          await r.body.dump();
        },
        bare!.child.pid,
      );

    // Warm both servers (JIT, connections) before measuring.
    await pollStatus(agent, crispOrigin, headers, statusBody, 1);
    await pollStatus(agent, bare.url, headers, statusBody, 1);

    let c: StatusFigures | undefined;
    let b: StatusFigures | undefined;
    let logBytesPer1000 = Number.POSITIVE_INFINITY;
    let cUp = { mbPerS: 0, cpuSPerGiB: Number.POSITIVE_INFINITY };
    let bUp = { mbPerS: 0, cpuSPerGiB: Number.POSITIVE_INFINITY };
    const better = (x: StatusFigures | undefined, y: StatusFigures) =>
      !x ? y : { ...(y.reqPerS > x.reqPerS ? y : x), cpuUs: Math.min(x.cpuUs, y.cpuUs) };
    const betterUp = (x: typeof cUp, y: typeof cUp) => ({
      mbPerS: Math.max(x.mbPerS, y.mbPerS),
      cpuSPerGiB: Math.min(x.cpuSPerGiB, y.cpuSPerGiB),
    });
    const only = process.env.CRISP_BENCH_SERVER_ONLY;
    for (let round = 0; round < ROUNDS; round++) {
      if (only !== 'upload') {
        const before = crisp.outBytes();
        const cs = await pollStatus(agent, crispOrigin, headers, statusBody, STATUS_SECONDS, crisp.child.pid);
        logBytesPer1000 = Math.min(logBytesPer1000, ((crisp.outBytes() - before) / cs.requests) * 1000);
        c = better(c, cs);
        b = better(b, await pollStatus(agent, bare.url, headers, statusBody, STATUS_SECONDS, bare.child.pid));
      }
    }
    if (only !== 'status') {
      for (let round = 0; round < UPLOAD_ROUNDS; round++) {
        cUp = betterUp(cUp, await crispUpload());
        bUp = betterUp(bUp, await bareUpload());
        await rm(bareDir, { recursive: true, force: true });
        await mkdir(bareDir);
      }
    }
    const ratio = (x: number, y: number) => `${(x / y).toFixed(2)}×`;

    // Another client's polls with the server idle, then while a 16.7 MP task runs in it (same process, same run).
    const idleEnd = performance.now() + (QUICK ? 3000 : 8000);
    const idle = await lightPolls(agent, crispOrigin, headers, statusBody, () => performance.now() > idleEnd);
    const big = await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
      .resize(1024, 1024)
      .jpeg()
      .toBuffer();
    const heavyForm = new FormData();
    for (const [k, v] of Object.entries({
      model: 'digital-art-4x',
      scale: '4',
      saveImageAs: 'jpg',
      enhanceFace: 'false',
    }))
      heavyForm.append(k, v);
    heavyForm.append('file', new Blob([big]), 'big.jpg');
    const t16 = performance.now();
    const heavy = await agent.request({
      origin: crispOrigin,
      path: '/start-task',
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      body: heavyForm,
    });
    const heavyText = await heavy.body.text();
    if (heavy.statusCode !== 200) throw new Error(`start-task (16 MP): ${heavy.statusCode} ${heavyText}`);
    const heavyId = (JSON.parse(heavyText) as { data: { taskId: string } }).data.taskId;
    let heavyDone = false;
    const watcher = (async () => {
      try {
        while (!heavyDone) {
          await new Promise((r) => setTimeout(r, 500));
          const status = (await post('/get-task-status', { data: { taskId: heavyId } })).json.data.status;
          if (status === 'PROCESSING_FAILED') throw new Error('the 16 MP bench task failed');
          heavyDone = status === 'PROCESSED';
        }
      } finally {
        heavyDone = true; // a failure ends the polls too; it is rethrown below
      }
    })();
    const loaded = await lightPolls(agent, crispOrigin, headers, statusBody, () => heavyDone);
    await watcher;
    const taskSeconds = (performance.now() - t16) / 1000;

    c ??= { reqPerS: 0, p50: 0, p99: 0, requests: 0, cpuUs: 0 };
    b ??= { reqPerS: 0, p50: 0, p99: 0, requests: 0, cpuUs: 0 };
    return [
      {
        name: 'status req/s',
        crisp: Math.round(c.reqPerS),
        bare: Math.round(b.reqPerS),
        unit: 'req/s',
        ratio: ratio(c.reqPerS, b.reqPerS),
        note: `${CLIENTS} connections, ${STATUS_SECONDS}s, status body ${Buffer.byteLength(statusText)} B`,
      },
      {
        name: 'status p50',
        crisp: Number(c.p50.toFixed(1)),
        bare: Number(b.p50.toFixed(1)),
        unit: 'ms',
        ratio: ratio(c.p50, b.p50),
        note: 'lower is better',
      },
      {
        name: 'status p99',
        crisp: Number(c.p99.toFixed(1)),
        bare: Number(b.p99.toFixed(1)),
        unit: 'ms',
        ratio: ratio(c.p99, b.p99),
        note: 'lower is better',
      },
      {
        name: 'status server CPU',
        crisp: Math.round(c.cpuUs),
        bare: Math.round(b.cpuUs),
        unit: 'µs/req',
        ratio: ratio(c.cpuUs, b.cpuUs),
        note: 'user+sys of the server process; lower is better',
      },
      {
        name: 'upload MB/s',
        crisp: Number(cUp.mbPerS.toFixed(1)),
        bare: Number(bUp.mbPerS.toFixed(1)),
        unit: 'MB/s',
        ratio: ratio(cUp.mbPerS, bUp.mbPerS),
        note: `${UPLOAD_BYTES / 1048576} MiB, ${parts} parts, 4 in flight, + complete`,
      },
      {
        name: 'upload server CPU',
        crisp: Number(cUp.cpuSPerGiB.toFixed(2)),
        bare: Number(bUp.cpuSPerGiB.toFixed(2)),
        unit: 's/GiB',
        ratio: ratio(cUp.cpuSPerGiB, bUp.cpuSPerGiB),
        note: 'user+sys of the server process; lower is better',
      },
      {
        name: 'status p99, 16 MP task running',
        crisp: Number(quantile(loaded, 0.99).toFixed(1)),
        bare: Number(quantile(idle, 0.99).toFixed(1)),
        unit: 'ms',
        ratio: ratio(quantile(loaded, 0.99), quantile(idle, 0.99)),
        note: `bare column: the same crisp serve idle; 1 client every ${LOADED_POLL_MS} ms, ${loaded.length} polls during the task`,
      },
      {
        name: 'status max, 16 MP task running',
        crisp: Number((loaded.at(-1) ?? 0).toFixed(1)),
        bare: Number((idle.at(-1) ?? 0).toFixed(1)),
        unit: 'ms',
        ratio: ratio(loaded.at(-1) ?? 0, idle.at(-1) ?? 0),
        note: `bare column: idle; the task (1024² ×4 digital-art-4x, jpg) took ${taskSeconds.toFixed(1)} s start to PROCESSED`,
      },
      {
        name: 'log bytes / 1000 polls',
        crisp: Math.round(logBytesPer1000),
        bare: 0,
        unit: 'B',
        ratio: '',
        note: 'crisp serve stdout at the default --log-level',
      },
    ];
  } finally {
    await agent.close();
    if (crisp) await stopProcess(crisp);
    if (bare) await stopProcess(bare);
    await rm(dataDir, { recursive: true, force: true });
    await rm(bareDir, { recursive: true, force: true });
  }
}

export function formatServerRows(rows: ServerBenchRow[]): string {
  const header = ['', 'crisp serve', 'bare node', 'crisp ÷ bare', 'notes'];
  const cells = rows.map((r) => [
    r.name,
    `${r.crisp} ${r.unit}`,
    r.bare ? `${r.bare} ${r.unit}` : '—',
    r.ratio || '—',
    r.note,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(formatServerRows(await runServerBench()));
}
