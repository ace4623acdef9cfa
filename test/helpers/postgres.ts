/**
 * A throwaway PostgreSQL cluster for tests: Debian's server binaries (`apt-get install postgresql`;
 * `.ci/run` installs them), a fresh data directory in tmp, trust auth on 127.0.0.1 and a free port,
 * fsync off. As root the server runs as the `postgres` user (initdb refuses root).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** How long a stopping server waits for its sessions to end before ending them itself. */
const FAST_AFTER_MS = 5_000;

export interface TempPostgres {
  url: string;
  stop(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin');
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql: apt-get install postgresql');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export async function startTempPostgres(): Promise<TempPostgres> {
  const bin = binDir();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crisp-pg-'));
  // initdb refuses to run as root: run the server binaries as the postgres user directly (not through
  // runuser, so signals reach the postmaster itself).
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    owner = {
      uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
    };
    chownSync(dir, owner.uid, owner.gid);
  }
  const data = path.join(dir, 'data');
  execFileSync(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], {
    stdio: 'ignore',
    cwd: dir,
    ...owner,
  });
  const port = await freePort();
  const args = [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'max_connections=200',
  ];
  const child: ChildProcess = spawn(path.join(bin, 'postgres'), args, { stdio: 'ignore', cwd: dir, ...owner });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const until = Date.now() + 30_000;
  for (;;) {
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      await c.end();
      break;
    } catch (e) {
      await c.end().catch(() => undefined);
      if (Date.now() > until || child.exitCode !== null) {
        child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`temporary PostgreSQL did not start: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    async stop() {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        // "Smart" shutdown first: it waits for the sessions to end. A pool's end() does not wait for its
        // connections to close, so a "fast" shutdown right after it races their goodbyes and answers some with
        // FATAL 57P01, an error event on a client that is already leaving. Sessions still open after
        // FAST_AFTER_MS (a test that never ended its pool) are ended by a fast shutdown; a hang by SIGKILL.
        const fast = setTimeout(() => child.kill('SIGINT'), FAST_AFTER_MS);
        const hard = setTimeout(() => child.kill('SIGKILL'), FAST_AFTER_MS + 10_000);
        child.once('exit', () => {
          clearTimeout(fast);
          clearTimeout(hard);
          resolve();
        });
        child.kill('SIGTERM');
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh database on the cluster, so test files never see each other's rows. */
export async function createDatabase(pgUrl: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: pgUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${name}"`);
    await c.query(`CREATE DATABASE "${name}"`);
  } finally {
    await c.end();
  }
  const u = new URL(pgUrl);
  u.pathname = `/${name}`;
  return u.toString();
}
