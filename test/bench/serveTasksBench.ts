/**
 * `crisp serve` throughput on real-size work (`npm run bench -- --only serve-tasks`): one server process with its
 * default flags (the JSON store, one inference slot), TASKS one-image tasks of a 960×540 photo at ×4 (→ 3840×2160
 * PNG) started at once, timed until the last one is PROCESSED: tasks per minute. CRISP_BENCH_MODEL picks the model
 * (default digital-art-4x, the lighter bundled one); CRISP_BENCH_TASKS the count (default 8).
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { Agent, FormData } from 'undici';
import { IMAGES_DIR, ONNX_DIR, REPO_ROOT } from '../helpers/paths.js';
import { startProcess, stopProcess } from './serverBench.js';

const CLI = ['--import', 'tsx', path.join(REPO_ROOT, 'app', 'cli', 'main.ts')];

export async function serveTasksBench(): Promise<void> {
  const tasks = Number(process.env.CRISP_BENCH_TASKS ?? 8);
  const model = process.env.CRISP_BENCH_MODEL ?? 'digital-art-4x';
  const root = await mkdtemp(path.join(os.tmpdir(), 'crisp-bench-serve-tasks-'));
  const agent = new Agent({ connections: 16 });
  try {
    const image = await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
      .resize(960, 540, { fit: 'fill' })
      .png()
      .toBuffer();
    const data = path.join(root, 'data');
    const key = execFileSync(
      process.execPath,
      [...CLI, 'users', 'add', '--data', data, '--email', 'bench@example.com', '--credits', '100000'],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    )
      .trim()
      .split('\n')
      .pop()!
      .trim();
    const server = await startProcess(
      [
        ...CLI,
        'serve',
        '--data',
        data,
        '--port',
        '0',
        '--models-dir',
        ONNX_DIR,
        '--max-tasks-per-user',
        '1000',
        '--rate-limit',
        '1000000000',
      ],
      'crisp serve',
    );
    try {
      const call = async (route: string, body: FormData | string): Promise<Record<string, unknown>> => {
        const r = await agent.request({
          origin: server.url,
          path: route,
          method: 'POST',
          headers: { 'x-api-key': key, ...(typeof body === 'string' ? { 'content-type': 'application/json' } : {}) },
          body,
        });
        const text = await r.body.text();
        if (r.statusCode !== 200) throw new Error(`${route}: ${r.statusCode} ${text}`);
        return (JSON.parse(text) as { data: Record<string, unknown> }).data;
      };
      const start = async (): Promise<string> => {
        const form = new FormData();
        for (const [k, v] of Object.entries({ model, scale: '4', saveImageAs: 'png', enhanceFace: 'false' }))
          form.append(k, v);
        form.append('file', new Blob([image]), 'photo.png');
        return (await call('/start-task', form)).taskId as string;
      };
      const finish = async (taskId: string): Promise<void> => {
        for (;;) {
          const s = (await call('/get-task-status', JSON.stringify({ data: { taskId } }))).status;
          if (s === 'PROCESSED') return;
          if (s === 'PROCESSING_FAILED') throw new Error(`bench task ${taskId} failed`);
          await new Promise((r) => setTimeout(r, 200));
        }
      };
      // One task first, so model loading is not counted.
      await finish(await start());
      const t0 = performance.now();
      const ids = await Promise.all(Array.from({ length: tasks }, () => start()));
      await Promise.all(ids.map(finish));
      const minutes = (performance.now() - t0) / 60_000;
      console.log(
        `\ncrisp serve, ${tasks} concurrent tasks of a 960×540 PNG at ×4 (${model}, PNG out): ${(tasks / minutes).toFixed(2)} tasks/min (${(minutes * 60).toFixed(1)} s); ${os.cpus().length} CPUs`,
      );
    } finally {
      await stopProcess(server);
    }
  } finally {
    await agent.close();
    await rm(root, { recursive: true, force: true });
  }
}
