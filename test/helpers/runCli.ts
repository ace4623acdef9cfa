import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODELS_DIR, REPO_ROOT } from './paths.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** An empty user data folder, so the real home directory's models and settings never leak into a test. */
const ISOLATED_DATA_HOME = mkdtempSync(path.join(os.tmpdir(), 'crisp-home-'));

/** Runs the real `crisp` entry point (bin/crisp.js) as a child process. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  opts: { cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/crisp.js'), ...args], {
      cwd: opts.cwd ?? REPO_ROOT,
      env: { ...process.env, XDG_DATA_HOME: ISOLATED_DATA_HOME, CRISP_MODELS_DIR: MODELS_DIR, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** stderr lines that are ours (native libraries may print their own warnings). */
export function crispLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith('crisp:'));
}
