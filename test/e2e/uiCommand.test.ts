/** `crisp ui` as a command: prints a tokenised 127.0.0.1 URL, serves the UI there, stops on SIGTERM. */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODELS_DIR, REPO_ROOT } from '../helpers/paths.js';
import { buildRendererOnce } from './uiHarness.js';

// The command module on its own program: independent of whether app/cli/main.ts registers it yet.
const RUN_UI = `
import { Command } from 'commander';
import { registerUi } from './app/cli/commands/ui.ts';
const program = new Command('crisp');
registerUi(program);
await program.parseAsync(process.argv.slice(1), { from: 'user' });
`;

describe('crisp ui command', () => {
  it('prints the URL, answers with the token only, and exits cleanly on SIGTERM', async () => {
    const rendererDir = await buildRendererOnce();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-ui-cmd-'));
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', RUN_UI, '--', 'ui', '--port', '0', '--data', dataDir],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, CRISP_RENDERER_DIR: rendererDir, CRISP_MODELS_DIR: MODELS_DIR },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        stdout += d;
        const m = /crisp ui: open (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(stdout);
        if (m) resolve(m[1]!);
      });
      child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
    });
    const origin = new URL(url).origin;
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(`${origin}/`)).status).toBe(403);
    const token = new URL(url).searchParams.get('token')!;
    const res = await fetch(`${origin}/api/listModels`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-crisp-token': token },
      body: '{"args":[]}',
    });
    const models = ((await res.json()) as { result: { name: string; installed: boolean }[] }).result;
    expect(models.find((m) => m.name === 'digital-art-4x')?.installed).toBe(true);
    const code = await new Promise<number | null>((resolve) => {
      child.on('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    expect(code).toBe(0);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('an output folder under /proc answers within 2 s with a sentence; the server stays responsive and stops on SIGTERM', async () => {
    const rendererDir = await buildRendererOnce();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-ui-proc-'));
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', RUN_UI, '--', 'ui', '--port', '0', '--data', dataDir],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, CRISP_RENDERER_DIR: rendererDir, CRISP_MODELS_DIR: MODELS_DIR },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          stdout += d;
          const m = /crisp ui: open (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(stdout);
          if (m) resolve(m[1]!);
        });
        child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
      });
      const origin = new URL(url).origin;
      const token = new URL(url).searchParams.get('token')!;
      const call = (method: string, args: unknown[]) =>
        fetch(`${origin}/api/${method}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-crisp-token': token },
          body: JSON.stringify({ args }),
          // Bounds a hang (the bug this guards against); the 2 s requirement is asserted below.
          signal: AbortSignal.timeout(20_000),
        });
      const before = (await (await call('getSettings', [])).json()) as { result: { outputFolder: string } };

      for (const folder of ['/proc/x', '/proc/x/y/z']) {
        const t0 = performance.now();
        const res = await call('updateSettings', [{ outputFolder: folder }]);
        const ms = performance.now() - t0;
        expect(res.status).toBe(422); // the bridge's answer to a refused argument (BadRequestError)
        expect(await res.json()).toEqual({
          code: 'bad-request',
          error: `Cannot use the output folder ${folder}: it (or a folder above it) does not exist, and it cannot be created there. Check the path.`,
        });
        expect(ms).toBeLessThan(2_000);
      }
      // Still responsive, and nothing changed: the next run does not write somewhere else silently.
      const after = (await (await call('getSettings', [])).json()) as { result: { outputFolder: string } };
      expect(after.result.outputFolder).toBe(before.result.outputFolder);
      expect((await call('listModels', [])).status).toBe(200);

      const code = await new Promise<number | null>((resolve) => {
        child.on('exit', (c) => resolve(c));
        child.kill('SIGTERM');
      });
      expect(code).toBe(0);
      expect(stderr).toBe('');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('says in one line when the UI is not built', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        RUN_UI.replace(
          "await program.parseAsync(process.argv.slice(1), { from: 'user' });",
          "program.exitOverride(); try { await program.parseAsync(process.argv.slice(1), { from: 'user' }); } catch (e) { process.stderr.write('crisp: error: ' + e.message + '\\n'); process.exit(1); }",
        ),
        '--',
        'ui',
      ],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, CRISP_RENDERER_DIR: path.join(os.tmpdir(), 'crisp-no-such-renderer') },
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(/^crisp: error: the UI is not built .*npm run build:renderer/);
  });
});
