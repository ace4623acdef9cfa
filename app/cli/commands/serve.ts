/**
 * `crisp serve`: the upscaling contract over HTTP (engine/server). Every limit is a flag so operators
 * never need to edit code; the flags are declared in app/cli/processOptions.ts (defaults documented in
 * docs/deploy.md).
 */
import type { Command } from 'commander';
import { modelSearchDirs, resolveFaceModel } from '../../../engine/core/index.js';
import { loadServer } from '../../../engine/server/index.js';
import { DEFAULT_LEASE_MS } from '../../../engine/service/index.js';
import { usageError } from '../cliError.js';
import { addOptionFlags } from '../optionFlags.js';
import { onStopSignal, serverIsolateFlags } from '../serverIsolate.js';
import {
  ENGINE_LIMIT_OPTIONS,
  ENGINE_OPTIONS,
  modelDirsOf,
  SERVE_OPTIONS,
  SERVER_LIMIT_OPTIONS,
} from '../processOptions.js';
import { addStorageOptions, resolveStorage, type StorageFlags } from '../storageFlags.js';

export function register(program: Command): void {
  const command = addStorageOptions(
    program.command('serve').description('Serve the upscaling API over HTTP (X-API-Key users: see "crisp users")'),
    'where tasks, uploads and outputs live: a directory every API and worker process mounts (e.g. NFS), or s3://bucket/prefix (needs --db) (default: --data)',
  );
  for (const table of [SERVE_OPTIONS, ENGINE_LIMIT_OPTIONS, SERVER_LIMIT_OPTIONS, ENGINE_OPTIONS])
    addOptionFlags(command, Object.values(table));
  command.action(async (raw: Record<string, unknown>) => {
    const { readOptionFlags } = await import('../readOptionFlags.js');
    const flags = readOptionFlags(raw, SERVE_OPTIONS);
    const engine = readOptionFlags(raw, ENGINE_OPTIONS);
    const engineLimits = readOptionFlags(raw, ENGINE_LIMIT_OPTIONS);
    const serverLimits = readOptionFlags(raw, SERVER_LIMIT_OPTIONS);
    if (!flags.db && (flags.workers !== 1 || flags.lease !== DEFAULT_LEASE_MS)) {
      throw usageError('--workers and --lease need --db (without a database this process runs every task itself)');
    }
    const storage = resolveStorage(raw as StorageFlags, flags.db ?? undefined);
    const modelDirs = modelDirsOf(engine.modelsDir);
    if (engine.faceModel !== null) {
      // Refused before listening (face-model-missing, its sentence says how to get one): a server that says it
      // enhances faces must be able to.
      resolveFaceModel(engine.faceModel, modelDirs ?? modelSearchDirs());
    }
    // Fastify and the engine load only for this command, so `crisp --help` stays fast.
    const { startServer } = await loadServer();
    // Refused before anything was opened, in a sentence of its own: another process owns the data folder
    // (folder-in-use), or the port is taken (port-in-use).
    const server = await startServer({
      host: flags.host,
      port: flags.port,
      dataDir: flags.data,
      ...(flags.db ? { db: flags.db, workers: flags.workers, leaseMs: flags.lease } : {}),
      ...(storage.kind === 'dir'
        ? { storageDir: storage.dir }
        : storage.kind === 's3'
          ? { objects: storage.location }
          : {}),
      ...(flags.publicUrl ? { publicUrl: new URL(flags.publicUrl).toString().replace(/\/$/, '') } : {}),
      allowPrivateUrls: engine.allowPrivateUrls,
      engineLimits,
      serverLimits,
      ...(modelDirs ? { modelDirs } : {}),
      executionProvider: engine.executionProvider,
      ...(engine.threads ? { threads: engine.threads } : {}),
      logLevel: flags.logLevel,
      logFormat: flags.logFormat,
      ledgerRetentionMs: flags.ledgerRetentionDays * 86_400_000,
      ...(flags.metricsToken ? { metricsToken: flags.metricsToken } : {}),
      ...(engine.faceModel !== null ? { face: { model: engine.faceModel, strength: engine.faceStrength } } : {}),
    });
    // Before the line below: a supervisor may send SIGTERM as soon as it reads it.
    onStopSignal((signal) => {
      server.app.log.info({ signal }, 'shutting down');
      void server.close().finally(() => process.exit(0));
    });
    // A parent process (tests, supervisors) reads this line to learn the port when --port 0.
    process.stdout.write(`crisp serve: listening on ${server.url}\n`);
    const isolate = serverIsolateFlags();
    if (isolate) server.app.log.info({ v8: isolate }, 'running in the server isolate');
  });
}
