/**
 * `crisp worker`: runs tasks queued in PostgreSQL by `crisp serve --db` processes, on any machine that
 * reaches the database and mounts the shared storage directory (docs/deploy.md#team-scale). It serves no
 * HTTP; it only claims jobs, runs the engine and writes outputs and progress back.
 */
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import {
  assertNotOwned,
  loadAccounts,
  loadPostgresEngine,
  openObjectStore,
  SERVER_USER_LIMITS,
} from '../../../engine/service/index.js';
import { usageError } from '../cliError.js';
import { addOptionFlags } from '../optionFlags.js';
import { onStopSignal } from '../serverIsolate.js';
import { ENGINE_OPTIONS, modelDirsOf, WORKER_OPTIONS } from '../processOptions.js';
import { addStorageOptions, resolveStorage, type StorageFlags } from '../storageFlags.js';

export function register(program: Command): void {
  const command = addStorageOptions(
    program.command('worker').description('Run tasks queued by "crisp serve --db" (on this or any other machine)'),
    'what the servers share (their --storage): the directory, or s3://bucket/prefix',
  );
  for (const table of [WORKER_OPTIONS, ENGINE_OPTIONS]) addOptionFlags(command, Object.values(table));
  command.action(async (raw: Record<string, unknown>) => {
    const { readOptionFlags } = await import('../readOptionFlags.js');
    const flags = readOptionFlags(raw, WORKER_OPTIONS);
    const engineFlags = readOptionFlags(raw, ENGINE_OPTIONS);
    if (!flags.db) throw usageError('crisp worker needs --db postgres://… (or CRISP_DB_URL): the queue lives there');
    const choice = resolveStorage(raw as StorageFlags, flags.db);
    if (choice.kind === 'default')
      throw usageError(
        'crisp worker needs --storage: the directory or s3://bucket/prefix the servers keep tasks in (their --storage)',
      );
    if (choice.kind === 'dir' && flags.data)
      throw usageError('--data is for --storage s3://…; with a shared directory the worker works in it');
    // With a bucket the worker keeps only working copies, on its own disk.
    const storage =
      choice.kind === 'dir' ? choice.dir : path.resolve(flags.data ?? path.join(os.tmpdir(), 'crisp-worker'));
    const modelDirs = modelDirsOf(engineFlags.modelsDir);
    // A folder an embedded `crisp serve` owns is not shared: that server would resume, fail or remove what a
    // worker writes there. Checked before anything is opened (folder-in-use, a sentence of its own).
    await assertNotOwned(storage, choice.kind === 'dir' ? '--storage' : '--data');
    const [{ openAccounts }, { createPostgresEngine }] = await Promise.all([loadAccounts(), loadPostgresEngine()]);
    // A database that refuses is storage-failed, its sentence printed as it is.
    const stores = await openAccounts({ dataDir: storage, db: flags.db });
    const pool = stores.pool;
    if (!pool) throw usageError('crisp worker needs a PostgreSQL --db');
    // The ledger is the meter: a task that fails or is given up frees its reservation here.
    const objects =
      choice.kind === 's3'
        ? await openObjectStore(choice.location, {
            // A bucket attempt that failed and will be tried again: the operator sees an outage as it happens.
            onRetry: (detail) => console.warn(`crisp worker: storage: ${detail}`),
          })
        : undefined;
    const engine = await createPostgresEngine({
      dataDir: storage,
      ...(objects ? { objects } : {}),
      credits: stores.ledger,
      queue: { pool, workers: flags.workers, leaseMs: flags.lease },
      limits: SERVER_USER_LIMITS,
      allowPrivateUrls: engineFlags.allowPrivateUrls,
      executionProvider: engineFlags.executionProvider,
      ...(engineFlags.threads ? { threads: engineFlags.threads } : {}),
      ...(modelDirs ? { modelDirs } : {}),
      // The API processes sweep expired files; several sweepers on one directory would only repeat work.
      sweepIntervalMs: 0,
      // Task errors reach API users: paths and commands stay in this worker's log.
      operatorLog: (detail) => console.warn(`crisp worker: ${detail}`),
      ...(engineFlags.faceModel !== null
        ? { face: { model: engineFlags.faceModel, strength: engineFlags.faceStrength } }
        : {}),
    }).catch(async (e: unknown) => {
      objects?.close();
      await stores.close();
      // Refused before taking jobs (face-model-missing): a worker that says it enhances faces must be able to.
      throw e;
    });
    // Before the line below: a supervisor may send SIGTERM as soon as it reads it.
    onStopSignal(() => {
      // Running tasks are handed back to the queue (unlocked), not failed: another worker finishes them.
      void engine
        .close()
        .then(() => stores.close())
        .then(() => objects?.close())
        .finally(() => process.exit(0));
    });
    // A parent process (tests, supervisors) reads this line to know the worker is taking jobs.
    process.stdout.write(
      `crisp worker: running ${flags.workers} at once on ${objects ? objects.description : storage}\n`,
    );
  });
}
