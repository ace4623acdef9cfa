/**
 * `crisp worker`: runs tasks queued in PostgreSQL by `crisp serve --db` processes, on any machine that
 * reaches the database and mounts the shared storage directory (docs/deploy.md#team-scale). It serves no
 * HTTP; it only claims jobs, runs the engine and writes outputs and progress back.
 */
import os from 'node:os';
import path from 'node:path';
import { Option, type Command } from 'commander';
import {
  EXECUTION_PROVIDERS,
  FaceModelMissingError,
  type ExecutionProviderChoice,
} from '../../../engine/core/index.js';
import {
  assertNotOwned,
  DEFAULT_LEASE_MS,
  FolderInUseError,
  loadAccounts,
  loadPostgres,
  loadPostgresEngine,
  openObjectStore,
  SERVER_USER_LIMITS,
} from '../../../engine/service/index.js';
import { usageError } from '../cliError.js';
import { positiveInt } from './serve.js';
import { addStorageOptions, resolveStorage, type StorageFlags } from '../storageFlags.js';

interface WorkerFlags extends StorageFlags {
  db?: string;
  data?: string;
  workers: number;
  lease: number;
  modelsDir?: string[];
  executionProvider: ExecutionProviderChoice;
  threads?: number;
  allowPrivateUrls?: boolean;
  faceModel?: string;
  faceStrength?: string;
}

export function register(program: Command): void {
  addStorageOptions(
    program.command('worker').description('Run tasks queued by "crisp serve --db" (on this or any other machine)'),
    'what the servers share (their --storage): the directory, or s3://bucket/prefix',
  )
    .option('--db <url>', 'PostgreSQL URL the servers use (default: $CRISP_DB_URL)', process.env.CRISP_DB_URL)
    .option(
      '--data <dir>',
      'with --storage s3://…: local folder for the working copies of running tasks (default: a folder in the temp directory)',
    )
    .option('--workers <n>', 'tasks this process runs at once (they share its device image by image)', positiveInt, 1)
    .option(
      '--lease <ms>',
      'a task whose worker died is run again by another after this long (the same on every process)',
      positiveInt,
      DEFAULT_LEASE_MS,
    )
    .option('--models-dir <dir...>', 'where the ONNX models are (default: the standard model folders)')
    .addOption(new Option('--execution-provider <ep>', 'inference device').choices(EXECUTION_PROVIDERS).default('auto'))
    .option('--threads <n>', 'CPU threads for inference', positiveInt)
    .option(
      '--face-model <name>',
      'run enhanceFace tasks with this face model (as on crisp serve; without it such tasks fail, uncharged)',
    )
    .option('--face-strength <0-1>', 'with --face-model: share of the restored face in the blend', '1')
    .option('--allow-private-urls', 'let task urls reach loopback/private addresses (trusted networks only)')
    .action(async (flags: WorkerFlags) => {
      if (!flags.db) throw usageError('crisp worker needs --db postgres://… (or CRISP_DB_URL): the queue lives there');
      const choice = resolveStorage(flags, flags.db);
      if (choice.kind === 'default')
        throw usageError(
          'crisp worker needs --storage: the directory or s3://bucket/prefix the servers keep tasks in (their --storage)',
        );
      if (choice.kind === 'dir' && flags.data)
        throw usageError('--data is for --storage s3://…; with a shared directory the worker works in it');
      // With a bucket the worker keeps only working copies, on its own disk.
      const storage =
        choice.kind === 'dir' ? choice.dir : path.resolve(flags.data ?? path.join(os.tmpdir(), 'crisp-worker'));
      const faceStrength = Number(flags.faceStrength ?? '1');
      if (!Number.isFinite(faceStrength) || faceStrength < 0 || faceStrength > 1)
        throw usageError('--face-strength must be a number from 0 to 1');
      // A folder an embedded `crisp serve` owns is not shared: that server would resume, fail or remove what a
      // worker writes there. Checked before anything is opened.
      try {
        await assertNotOwned(storage, choice.kind === 'dir' ? '--storage' : '--data');
      } catch (e) {
        if (e instanceof FolderInUseError) throw usageError(e.message);
        throw e;
      }
      const [{ openAccounts }, { createPostgresEngine }, { DatabaseError }] = await Promise.all([
        loadAccounts(),
        loadPostgresEngine(),
        loadPostgres(),
      ]);
      let stores;
      try {
        stores = await openAccounts({ dataDir: storage, db: flags.db });
      } catch (e) {
        if (e instanceof DatabaseError) throw usageError(e.message);
        throw e;
      }
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
        allowPrivateUrls: flags.allowPrivateUrls ?? false,
        executionProvider: flags.executionProvider,
        ...(flags.threads ? { threads: flags.threads } : {}),
        ...(flags.modelsDir ? { modelDirs: flags.modelsDir.map((d) => path.resolve(d)) } : {}),
        // The API processes sweep expired files; several sweepers on one directory would only repeat work.
        sweepIntervalMs: 0,
        // Task errors reach API users: paths and commands stay in this worker's log.
        operatorLog: (detail) => console.warn(`crisp worker: ${detail}`),
        ...(flags.faceModel !== undefined ? { face: { model: flags.faceModel, strength: faceStrength } } : {}),
      }).catch(async (e: unknown) => {
        objects?.close();
        await stores.close();
        // Refused before taking jobs: a worker that says it enhances faces must be able to.
        if (e instanceof FaceModelMissingError) throw usageError(e.message);
        throw e;
      });
      // A parent process (tests, supervisors) reads this line to know the worker is taking jobs.
      process.stdout.write(
        `crisp worker: running ${flags.workers} at once on ${objects ? objects.description : storage}\n`,
      );
      const stop = () => {
        // Running tasks are handed back to the queue (unlocked), not failed: another worker finishes them.
        void engine
          .close()
          .then(() => stores.close())
          .then(() => objects?.close())
          .finally(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}
