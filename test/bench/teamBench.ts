/**
 * Team-scale bench (`npm run bench -- --only team`): one `crisp serve` process (JSON store, in-process
 * runner) beside 2 API processes (`--workers 0`) + 2 `crisp worker` processes on one PostgreSQL and one
 * storage directory, same run, same client:
 *   status req/s, p99   64 connections polling one finished task (spread over the API processes)
 *   tasks/min           TASKS small one-image tasks started at once, until every one is PROCESSED
 * Everything shares this machine's cores (the database too), so read the two columns side by side, not as
 * absolute figures: on a 2-core machine more processes mostly compete for the same cores.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { Agent, FormData } from 'undici';
import { ONNX_DIR, REPO_ROOT } from '../helpers/paths.js';
import { createDatabase, startTempPostgres } from '../helpers/postgres.js';
import { startProcess, stopProcess } from './serverBench.js';

const QUICK = process.env.CRISP_BENCH_QUICK === '1';
const CLIENTS = 64;
const STATUS_SECONDS = QUICK ? 2 : 5;
const TASKS = QUICK ? 20 : 60;
const CLI = ['--import', 'tsx', path.join(REPO_ROOT, 'app', 'cli', 'main.ts')];

interface Figures {
  reqPerS: number;
  p99: number;
  tasksPerMin: number;
}

function addUser(args: string[]): string {
  const out = execFileSync(
    process.execPath,
    [...CLI, 'users', 'add', ...args, '--email', 'bench@example.com', '--credits', '1000000'],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  return out.trim().split('\n').pop()!.trim();
}

function startWorkerProcess(args: string[]): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, 'worker', ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('crisp worker: running')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`crisp worker exited (${code}): ${out}`)));
  });
}

async function measure(agent: Agent, origins: string[], key: string, image: Buffer): Promise<Figures> {
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const status = async (origin: string, taskId: string): Promise<string> => {
    const r = await agent.request({
      origin,
      path: '/get-task-status',
      method: 'POST',
      headers,
      body: JSON.stringify({ data: { taskId } }),
    });
    const text = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`status: ${r.statusCode} ${text}`);
    return (JSON.parse(text) as { data: { status: string } }).data.status;
  };
  const start = async (origin: string): Promise<string> => {
    const form = new FormData();
    for (const [k, v] of Object.entries({
      model: 'digital-art-4x',
      scale: '2',
      saveImageAs: 'png',
      enhanceFace: 'false',
    }))
      form.append(k, v);
    form.append('file', new Blob([image]), 'bench.png');
    const r = await agent.request({
      origin,
      path: '/start-task',
      method: 'POST',
      headers: { 'x-api-key': key },
      body: form,
    });
    const text = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`start-task: ${r.statusCode} ${text}`);
    return (JSON.parse(text) as { data: { taskId: string } }).data.taskId;
  };
  const finish = async (origin: string, taskId: string): Promise<void> => {
    const until = Date.now() + 600_000;
    for (;;) {
      const s = await status(origin, taskId);
      if (s === 'PROCESSED') return;
      if (s === 'PROCESSING_FAILED' || Date.now() > until) throw new Error(`bench task ${taskId} ended ${s}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  // tasks/min: every task started at once (spread over the API processes), until the last is PROCESSED.
  const t0 = performance.now();
  const ids = await Promise.all(Array.from({ length: TASKS }, (_, i) => start(origins[i % origins.length]!)));
  await Promise.all(ids.map((id, i) => finish(origins[(i + 1) % origins.length]!, id)));
  const tasksPerMin = TASKS / ((performance.now() - t0) / 60_000);

  const taskId = ids[0]!;
  const latencies: number[] = [];
  const poll = async (seconds: number) => {
    const end = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        while (performance.now() < end) {
          const s = performance.now();
          await status(origins[c % origins.length]!, taskId);
          latencies.push(performance.now() - s);
        }
      }),
    );
  };
  await poll(1); // warm up
  latencies.length = 0;
  const p0 = performance.now();
  await poll(STATUS_SECONDS);
  const reqPerS = latencies.length / ((performance.now() - p0) / 1000);
  latencies.sort((a, b) => a - b);
  return { reqPerS, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, tasksPerMin };
}

export async function runTeamBench(): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'crisp-bench-team-'));
  const pg = await startTempPostgres();
  const agent = new Agent({ connections: CLIENTS, pipelining: 1 });
  const servers: Awaited<ReturnType<typeof startProcess>>[] = [];
  const workers: ChildProcess[] = [];
  const image = await sharp({ create: { width: 48, height: 48, channels: 3, background: { r: 90, g: 140, b: 200 } } })
    .png()
    .toBuffer();
  try {
    const serveArgs = [
      '--port',
      '0',
      '--models-dir',
      ONNX_DIR,
      '--rate-limit',
      '1000000000',
      '--max-tasks-per-user',
      '1000',
      '--threads',
      '1',
    ];
    // One process, today's default.
    const single = path.join(root, 'single');
    const singleKey = addUser(['--data', single]);
    const one = await startProcess([...CLI, 'serve', '--data', single, ...serveArgs], 'crisp serve');
    servers.push(one);
    const alone = await measure(agent, [one.url], singleKey, image);
    await stopProcess(one);

    // 2 API + 2 workers on PostgreSQL.
    const db = await createDatabase(pg.url, 'crisp_bench_team');
    const storage = path.join(root, 'shared');
    const teamKey = addUser(['--db', db]);
    const apis = await Promise.all(
      ['a', 'b'].map((n) =>
        startProcess(
          [
            ...CLI,
            'serve',
            '--db',
            db,
            '--data',
            path.join(root, n),
            '--storage',
            storage,
            '--workers',
            '0',
            ...serveArgs,
          ],
          `crisp serve ${n}`,
        ),
      ),
    );
    servers.push(...apis);
    workers.push(
      ...(await Promise.all(
        [0, 1].map(() =>
          startWorkerProcess(['--db', db, '--storage', storage, '--models-dir', ONNX_DIR, '--threads', '1']),
        ),
      )),
    );
    const team = await measure(
      agent,
      apis.map((a) => a.url),
      teamKey,
      image,
    );

    const rows = [
      [
        'status req/s',
        alone.reqPerS.toFixed(0),
        team.reqPerS.toFixed(0),
        `${CLIENTS} connections, ${STATUS_SECONDS}s, one finished task`,
      ],
      ['status p99 (ms)', alone.p99.toFixed(1), team.p99.toFixed(1), 'lower is better'],
      [
        'tasks/min',
        alone.tasksPerMin.toFixed(0),
        team.tasksPerMin.toFixed(0),
        `${TASKS} one-image 48×48 ×2 tasks started at once, --threads 1 per runner`,
      ],
    ];
    const header = ['', '1 process (JSON)', '2 API + 2 workers (PostgreSQL)', 'notes'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(' | ')} |`;
    return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
  } finally {
    await agent.close();
    for (const s of servers) await stopProcess(s);
    for (const w of workers) {
      if (w.exitCode === null) {
        const exited = new Promise((r) => w.once('exit', r));
        w.kill('SIGTERM');
        await exited;
      }
    }
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
}
