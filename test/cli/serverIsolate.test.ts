import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVER_HEAP_FLAGS, SERVER_ISOLATE_ENV, wantsServerIsolate } from '../../app/cli/serverIsolate.js';
import { REPO_ROOT } from '../helpers/paths.js';

const BUILT = new URL('file:///opt/crisp/out/cli/main.js');
const ROOT = new Set(['--verbose']);

describe('which commands run in the server isolate', () => {
  it('serve and worker from the built CLI, after root flags; nothing else', () => {
    const argv = (...a: string[]) => ['/usr/bin/node', '/opt/crisp/bin/crisp.js', ...a];
    expect(wantsServerIsolate(argv('serve', '--port', '0'), BUILT, ROOT)).toBe(true);
    expect(wantsServerIsolate(argv('--verbose', 'worker', '--db', 'x'), BUILT, ROOT)).toBe(true);
    expect(wantsServerIsolate(argv('upscale', 'serve'), BUILT, ROOT)).toBe(false);
    expect(wantsServerIsolate(argv('users', 'add'), BUILT, ROOT)).toBe(false);
    expect(wantsServerIsolate(argv(), BUILT, ROOT)).toBe(false);
    // The TypeScript sources (CRISP_DEV=1) run in place.
    expect(wantsServerIsolate(argv('serve'), new URL('file:///opt/crisp/app/cli/main.ts'), ROOT)).toBe(false);
  });

  it(`${SERVER_ISOLATE_ENV}=0 keeps a server on the main thread`, () => {
    const before = process.env[SERVER_ISOLATE_ENV];
    process.env[SERVER_ISOLATE_ENV] = '0';
    try {
      expect(wantsServerIsolate(['node', 'crisp.js', 'serve'], BUILT, ROOT)).toBe(false);
    } finally {
      if (before === undefined) delete process.env[SERVER_ISOLATE_ENV];
      else process.env[SERVER_ISOLATE_ENV] = before;
    }
  });
});

/** Starts the host process; resolves once the stand-in server has said where it runs (or the host ended). */
function startHost(mode: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/isolateHost.ts', mode], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const ended = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ready = new Promise<void>((resolve) => {
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (stdout.includes('ready')) resolve();
    });
    void ended.then(() => resolve());
  });
  return { child, ready, ended, out: () => stdout, err: () => stderr };
}

describe('a server in the server isolate', () => {
  it('runs off the main thread; SIGTERM reaches its stop handler and its exit status is the process status', async () => {
    const host = startHost('serve');
    await host.ready;
    expect(host.out()).toContain('ready main-thread=false');
    host.child.kill('SIGTERM');
    expect(await host.ended).toBe(7);
    expect(host.out()).toContain('stopping on SIGTERM');
  });

  it('SIGINT too', async () => {
    const host = startHost('serve');
    await host.ready;
    host.child.kill('SIGINT');
    expect(await host.ended).toBe(7);
    expect(host.out()).toContain('stopping on SIGINT');
  });

  it('an exception nothing caught ends the process with status 1 and the error on stderr', async () => {
    const host = startHost('throw');
    expect(await host.ended).toBe(1);
    expect(host.err()).toContain('Error: the stand-in server failed');
  });
});

/** A real `crisp serve` started, told to stop once listening, and run to its end: its exit status and all it printed. */
async function serveUntilStopped(env: Record<string, string>) {
  const data = mkdtempSync(path.join(os.tmpdir(), 'crisp-isolate-'));
  try {
    const child = spawn(process.execPath, ['bin/crisp.js', 'serve', '--data', data, '--port', '0'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let stopped = false;
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      // One SIGTERM: a second one ends the process at once, by design.
      if (!stopped && out.includes('crisp serve: listening on')) stopped = child.kill('SIGTERM');
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, out };
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
}

describe('crisp serve', () => {
  it('runs in the server isolate, says so once at start, and stops on SIGTERM with status 0', async () => {
    const r = await serveUntilStopped({});
    expect(r.code).toBe(0);
    const lines = r.out.split('\n').filter((l) => l.includes('running in the server isolate'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ v8: SERVER_HEAP_FLAGS });
    expect(r.out).toContain('"signal":"SIGTERM"');
  });

  it(`runs on the main thread with ${SERVER_ISOLATE_ENV}=0`, async () => {
    const r = await serveUntilStopped({ [SERVER_ISOLATE_ENV]: '0' });
    expect(r.code).toBe(0);
    expect(r.out).toContain('crisp serve: listening on');
    expect(r.out).not.toContain('running in the server isolate');
  });
});
