/**
 * `crisp serve` as a real child process: users are managed with `crisp users`, the server is killed
 * with SIGKILL mid-task and restarted on the same --data. Balances, tasks and outputs survive; the task
 * that was running is resumed from its stored input, finishes, and is charged once.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsFile } from '../../engine/service/accounts/accountStore.js';
import type { AccountsState } from '../../engine/service/accounts/state.js';
import { anyImagePoint, createTestGate, type TestGate } from '../helpers/testGate.js';
import { crispCli, startServe, type ServeProcess } from './serveProcess.js';
import { BASIC, dataOf, httpGet, pollStatus, postForm, postJson, SET5, taskForm, tempDir } from './helpers.js';

let dataDir: string;
const servers: ServeProcess[] = [];

async function serve(env?: NodeJS.ProcessEnv): Promise<ServeProcess> {
  const server = await startServe(dataDir, [], env);
  servers.push(server);
  return server;
}

let gate: TestGate;

beforeAll(async () => {
  dataDir = await tempDir('crisp-restart-');
  gate = await createTestGate();
});
afterAll(async () => {
  for (const server of servers) await server.kill();
  await rm(dataDir, { recursive: true, force: true });
  await gate?.close();
});

describe('crisp users + crisp serve across a SIGKILL restart', () => {
  it('keeps users, balances, tasks and outputs; resumes the interrupted task and charges it once', async () => {
    const added = await crispCli([
      'users',
      'add',
      '--data',
      dataDir,
      '--email',
      'rs@example.com',
      '--credits',
      '3',
      '--extra-credits',
      '2',
    ]);
    expect(added.code).toBe(0);
    const key = added.stdout.trim().split('\n').pop()!;
    expect(key).toMatch(/^crisp_[A-Za-z0-9_-]{43}$/);
    expect(await readFile(accountsFile(dataDir), 'utf8')).not.toContain(key);
    const bad = await crispCli(['users', 'add', '--data', dataDir, '--email', 'rs@example.com']);
    expect(bad.code).not.toBe(0);

    let server = await serve(gate.env);
    const bird = await readFile(path.join(SET5, 'bird.png'));
    const first = dataOf<{ taskId: string }>(
      await postForm(server.url, key, taskForm(BASIC, [{ name: 'file', fileName: 'bird.png', bytes: bird }])),
    );
    expect(await pollStatus(server.url, key, first.taskId)).toMatchObject({ status: 'PROCESSED', deductedCredits: 1 });

    // A task held mid-run by the test gate (before its image), then the process is killed: the same state
    // whatever the machine's speed. The restarted server has no gate.
    const noise = await sharp(randomBytes(300 * 300 * 3), { raw: { width: 300, height: 300, channels: 3 } })
      .png()
      .toBuffer();
    await gate.hold(anyImagePoint(0));
    const slow = await postForm(
      server.url,
      key,
      taskForm({ ...BASIC, scale: '4' }, [{ name: 'file', fileName: 'noise.png', bytes: noise }]),
    );
    expect(slow.headers['x-task-cost']).toBe('2');
    const slowId = dataOf<{ taskId: string }>(slow).taskId;
    expect(await gate.reached(anyImagePoint(0))).toBe(server.child.pid);
    const running = dataOf<{ status: string }>(
      await postJson(server.url, '/get-task-status', key, { data: { taskId: slowId } }),
    );
    expect(['PROCESSING', 'ENHANCING']).toContain(running.status);
    await server.kill();

    const onDisk = JSON.parse(await readFile(accountsFile(dataDir), 'utf8')) as AccountsState;
    expect(onDisk.charges[slowId]?.state).toBe('reserved');

    server = await serve();
    expect(dataOf<object>(await postJson(server.url, '/get-account', key, {}))).toMatchObject({
      currentCredits: 2,
      currentExtraCredits: 2,
    });
    const before = await pollStatus(server.url, key, first.taskId);
    expect(before).toMatchObject({ status: 'PROCESSED', creditsDeducted: true, deductedCredits: 1 });
    const dl = await httpGet(before.files[0]!.downloadLink);
    expect(dl.status).toBe(200);
    expect(await sharp(dl.bytes).metadata()).toMatchObject({ width: 576, height: 576 });

    const resumed = await pollStatus(server.url, key, slowId, 240_000);
    expect(resumed).toMatchObject({ status: 'PROCESSED', creditsDeducted: true, deductedCredits: 2 });
    const out = await httpGet(resumed.files[0]!.downloadLink);
    expect(await sharp(out.bytes).metadata()).toMatchObject({ width: 1200, height: 1200 });
    expect(await pollStatus(server.url, key, slowId)).toMatchObject({ deductedCredits: 2 });
    const after = JSON.parse(await readFile(accountsFile(dataDir), 'utf8')) as AccountsState;
    expect(after.charges[slowId]).toMatchObject({ state: 'settled', deducted: 2 });

    // The operator credits the user while the server runs; the server sees it.
    const credited = await crispCli(['users', 'credit', '--data', dataDir, '--email', 'rs@example.com', '--add', '5']);
    expect(credited.stdout).toBe('rs@example.com: 5 credits, 2 extra credits\n');
    expect(dataOf<object>(await postJson(server.url, '/get-account', key, {}))).toMatchObject({
      currentCredits: 5,
      currentExtraCredits: 2,
    });
    const listed = await crispCli(['users', 'list', '--data', dataDir]);
    expect(listed.stdout).toMatch(/rs@example\.com\s+5\s+2\s/);
    // SIGTERM: graceful shutdown, exit code 0.
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 300_000);
});
