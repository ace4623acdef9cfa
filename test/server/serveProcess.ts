/** `crisp serve` and `crisp worker` as real child processes (abuse and team tests): started with flags, peak memory read from /proc. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ONNX_DIR, REPO_ROOT } from '../helpers/paths.js';

const ENTRY = path.join(REPO_ROOT, 'app/cli/main.ts');

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Peak resident memory of the server so far (VmHWM), in bytes. */
  peakRss(): Promise<number>;
  /** Resolves when the process has ended (by itself, e.g. at a test-only crash point, or killed). */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): Promise<void>;
}

export async function crispCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], { cwd: REPO_ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export async function addCliUser(dataDir: string, email: string, credits: number): Promise<string> {
  const r = await crispCli(['users', 'add', '--data', dataDir, '--email', email, '--credits', String(credits)]);
  if (r.code !== 0) throw new Error(`crisp users add failed: ${r.stderr}`);
  return r.stdout.trim().split('\n').pop()!;
}

export async function startServe(
  dataDir: string,
  flags: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      ENTRY,
      'serve',
      '--port',
      '0',
      '--data',
      dataDir,
      '--models-dir',
      ONNX_DIR,
      '--log-level',
      'warn',
      ...flags,
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env },
  );
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 60_000);
    const onData = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
  return {
    child,
    url,
    output: () => out,
    exited: () => ended,
    async peakRss() {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
      if (!Number.isFinite(kb)) throw new Error('VmHWM not found');
      return kb * 1024;
    },
    kill: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  /** Resolves when the process has ended (by itself or killed). */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): Promise<void>;
}

/** `crisp worker` with flags; resolves once it says it is taking jobs. */
export async function startWorker(flags: string[], env: NodeJS.ProcessEnv = process.env): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, 'worker', '--models-dir', ONNX_DIR, ...flags], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start: ${out}`)), 60_000);
    child.stdout!.on('data', () => {
      if (out.includes('crisp worker: running')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited ${code}: ${out}`));
    });
  });
  return {
    child,
    output: () => out,
    exited: () => ended,
    kill: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
