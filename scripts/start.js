#!/usr/bin/env node
// `npm start`: build the renderer, main and preload, then launch Electron. When the Electron binary is
// missing and cannot be downloaded (offline machines, CI), say so in one line and point to `crisp ui`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const DOWNLOAD_TIMEOUT_MS = 20_000;

function fail(message) {
  process.stderr.write(`crisp: ${message}\n`);
  process.exit(1);
}

/** The binary path without require('electron'), which would download noisily and throw a stack trace. */
function electronBinary() {
  let pkgDir;
  try {
    pkgDir = path.dirname(require.resolve('electron/package.json'));
  } catch {
    return null;
  }
  const locate = () => {
    const pathFile = path.join(pkgDir, 'path.txt');
    if (!existsSync(pathFile)) return null;
    const rel = readFileSync(pathFile, 'utf8').trim();
    const dist = process.env.ELECTRON_OVERRIDE_DIST_PATH ?? path.join(pkgDir, 'dist');
    const bin = path.join(dist, rel);
    return existsSync(bin) ? bin : null;
  };
  const found = locate();
  if (found) return found;
  // One quiet, bounded attempt at the normal download; offline it fails fast.
  spawnSync(process.execPath, [path.join(pkgDir, 'install.js')], {
    stdio: 'ignore',
    timeout: DOWNLOAD_TIMEOUT_MS,
    cwd: pkgDir,
  });
  return locate();
}

const electron = electronBinary();
if (!electron) {
  fail(
    'the Electron binary is not available here (it could not be downloaded); run the same app in a browser instead: npm run ui',
  );
}

for (const [what, args] of [
  [
    'renderer',
    [
      path.join(root, 'node_modules/vite/bin/vite.js'),
      'build',
      '--config',
      path.join(root, 'vite.config.ts'),
      '--logLevel',
      'warn',
    ],
  ],
  ['main process', ['--import', 'tsx', path.join(root, 'electron/build.ts')]],
]) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) fail(`building the ${what} failed (see above)`);
}

const child = spawn(electron, [root], { cwd: root, stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
