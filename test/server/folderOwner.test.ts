/**
 * Issue 40 (Medium): a data folder has one owner. A second `crisp serve` on the folder of a running one (started
 * by mistake, on its busy port or on another) used to build the engine, "resume" the live server's running task
 * and cancel it on its failed start-up: the task became PROCESSING_FAILED and its reservation was released while
 * the live server delivered it (1 credit lost). Now the embedded server takes `<data>/owner.lock` before it opens
 * anything; another process refuses with a sentence naming the owner and touches nothing.
 *
 * And (Low): a kill -9 during a credit write left `accounts.json.lock` behind with no PID, so every start-task
 * waited for the lock to turn 10 s old. Locks record their holder now, and a dead holder's lock is taken over at
 * once — here the stale locks carry an mtime in the future, so only the PID can explain a takeover.
 *
 * All real processes; the running task is held before its image with the test gate, never raced.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsFile } from '../../engine/service/accounts/accountStore.js';
import type { AccountsState } from '../../engine/service/accounts/state.js';
import { OWNER_LOCK } from '../../engine/service/storage/folderOwner.js';
import { anyImagePoint, createTestGate } from '../helpers/testGate.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { BASIC, dataOf, pollStatus, postForm, postJson, SET5, taskForm, tempDir } from './helpers.js';
import { addCliUser, crispCli, startServe, type ServeProcess } from './serveProcess.js';

let root: string;
let bird: Buffer;
const servers: ServeProcess[] = [];

beforeAll(async () => {
  root = await tempDir('crisp-owner-');
  bird = await readFile(path.join(SET5, 'bird.png'));
});
afterAll(async () => {
  for (const s of servers) await s.kill();
  if (root) await rm(root, { recursive: true, force: true });
});

const accounts = async (dataDir: string) => JSON.parse(await readFile(accountsFile(dataDir), 'utf8')) as AccountsState;
const taskJson = async (dataDir: string, id: string) =>
  JSON.parse(await readFile(path.join(dataDir, 'tasks', id, 'task.json'), 'utf8')) as { status: string };

/** The PID of a process that has ended (so certainly not running now). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('a data folder has one owner', () => {
  it('a second crisp serve on the folder refuses, naming the owner; the running task ends PROCESSED, charged once', async () => {
    const dataDir = path.join(root, 'one');
    const gate = await createTestGate();
    const key = await addCliUser(dataDir, 'owner@example.com', 10);
    const first = await startServe(dataDir, ['--threads', '1'], gate.env);
    servers.push(first);
    const port = new URL(first.url).port;
    try {
      await gate.hold(anyImagePoint(0));
      const started = await postForm(
        first.url,
        key,
        taskForm(BASIC, [{ name: 'file', fileName: 'b.png', bytes: bird }]),
      );
      expect(started.status).toBe(200);
      const taskId = dataOf<{ taskId: string }>(started).taskId;
      expect(await gate.reached(anyImagePoint(0))).toBe(first.child.pid);
      const before = await accounts(dataDir);
      expect(before.charges[taskId]).toMatchObject({ state: 'reserved', cost: 1 });

      const sentence = new RegExp(
        `^crisp: error: the data folder ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by crisp serve ` +
          `\\(PID ${first.child.pid}, port ${port}, host [^,]+, since [^)]+\\); stop that process first or give this ` +
          'one another --data \\(nothing was changed\\)\\n$',
      );
      // On the owner's busy port (the mistake the audit made) and on a free one: refused the same way.
      for (const p of [port, '0']) {
        const second = await crispCli(['serve', '--data', dataDir, '--port', p, '--models-dir', ONNX_DIR]);
        expect(second.code).not.toBe(0);
        expect(second.stdout).toBe('');
        expect(second.stderr).toMatch(sentence);
      }
      // A worker (or a --db server) sharing the owned folder is refused before it reaches any database.
      const worker = await crispCli(['worker', '--db', 'postgres://127.0.0.1:1/none', '--storage', dataDir]);
      expect(worker.code).not.toBe(0);
      expect(worker.stderr).toMatch(
        /the data folder .* is in use by crisp serve \(PID \d+, port \d+,.*another --storage/,
      );
      const withDb = await crispCli(['serve', '--db', 'postgres://127.0.0.1:1/none', '--data', dataDir, '--port', '0']);
      expect(withDb.code).not.toBe(0);
      expect(withDb.stderr).toMatch(/the data folder .* is in use by crisp serve \(PID \d+/);

      // Nothing was touched: the task still runs on the first server, its reservation stands.
      expect((await taskJson(dataDir, taskId)).status).not.toBe('PROCESSING_FAILED');
      expect((await accounts(dataDir)).charges[taskId]).toEqual(before.charges[taskId]);
      expect(JSON.parse(await readFile(path.join(dataDir, OWNER_LOCK), 'utf8'))).toMatchObject({
        pid: first.child.pid,
        port: Number(port),
      });

      await gate.release(anyImagePoint(0));
      const done = await pollStatus(first.url, key, taskId);
      expect(done).toMatchObject({ status: 'PROCESSED', creditsDeducted: true, deductedCredits: 1 });
      expect(await pollStatus(first.url, key, taskId)).toMatchObject({ deductedCredits: 1 });
      const after = await accounts(dataDir);
      expect(after.charges[taskId]).toMatchObject({ state: 'settled', deducted: 1 });
      expect(after.users[0]).toMatchObject({ credits: 9 });
      expect(dataOf<object>(await postJson(first.url, '/get-account', key, {}))).toMatchObject({ currentCredits: 9 });
      expect(first.child.exitCode).toBeNull();

      // A graceful stop gives the folder up.
      const exited = new Promise<number | null>((resolve) => first.child.once('exit', (code) => resolve(code)));
      first.child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await expect(readFile(path.join(dataDir, OWNER_LOCK))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await gate.close();
    }
  }, 240_000);

  it('locks left by a dead process are taken over at once: the folder at start-up, accounts.json.lock on the first request', async () => {
    const dataDir = path.join(root, 'stale');
    const key = await addCliUser(dataDir, 'stale@example.com', 5);
    const pid = await deadPid();
    const host = os.hostname();
    const future = new Date(Date.now() + 3_600_000);
    // What a kill -9 of a server mid credit write leaves: both locks, recording a PID that no longer runs. Their
    // mtime is an hour ahead, so no age rule can take them over: only the dead PID can.
    const ownerLock = path.join(dataDir, OWNER_LOCK);
    const accountsLock = `${accountsFile(dataDir)}.lock`;
    await writeFile(
      ownerLock,
      JSON.stringify({ pid, host, token: randomUUID(), role: 'crisp serve', port: 1, since: Date.now() }),
    );
    await writeFile(accountsLock, JSON.stringify({ pid, host, token: randomUUID(), since: Date.now() }));
    for (const f of [ownerLock, accountsLock]) await utimes(f, future, future);

    const server = await startServe(dataDir, ['--threads', '1']);
    servers.push(server);
    expect(JSON.parse(await readFile(ownerLock, 'utf8'))).toMatchObject({ pid: server.child.pid });
    // Issue 40 (Low): no framework deprecation warning at start (Fastify's FSTDEP022 for maxParamLength was).
    expect(server.output()).not.toMatch(/FSTDEP|FastifyWarning|DeprecationWarning/);

    // The first request that writes credits takes the dead writer's lock over (before: it waited for the lock to
    // turn 10 s old, which this one never would, and answered 500 after 15 s).
    const started = await postForm(
      server.url,
      key,
      taskForm(BASIC, [{ name: 'file', fileName: 'b.png', bytes: bird }]),
    );
    expect(started.status, started.text).toBe(200);
    const taskId = dataOf<{ taskId: string }>(started).taskId;
    expect(await pollStatus(server.url, key, taskId)).toMatchObject({ status: 'PROCESSED', deductedCredits: 1 });
    await expect(readFile(accountsLock)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await accounts(dataDir)).users[0]).toMatchObject({ credits: 4 });
  }, 240_000);
});
