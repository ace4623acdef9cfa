#!/usr/bin/env node
/**
 * Builds the `crisp` command into out/cli: main.js (the CLI), engineWorker.js (the local engine's
 * worker process) and coreWorker.js (the core's worker threads), ESM for Node with every npm package left external (native modules cannot be bundled).
 * Code splitting keeps each command's heavy modules in their own chunk, loaded only when that command
 * runs. Run by `npm run build:cli`, by `prepare` (npm install / npm ci) and by the test setup.
 * Plain JavaScript so it runs before anything is compiled.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'out/cli');

export async function buildCli({ quiet = false } = {}) {
  await rm(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: {
      main: 'app/cli/main.ts',
      engineWorker: 'app/worker/engineWorker.ts',
      // The core's worker threads (engine/core/workerPool.ts finds it beside the chunk that starts them).
      coreWorker: 'engine/core/coreWorker.ts',
    },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    logLevel: quiet ? 'error' : 'warning',
    // Lets modules tell the built CLI from the TypeScript sources (e.g. which worker entry to fork).
    define: { 'process.env.CRISP_BUILT': '"1"' },
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildCli();
  process.stdout.write('built out/cli/{main.js,engineWorker.js,coreWorker.js}\n');
}
