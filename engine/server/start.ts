/**
 * Starts `crisp serve`: takes its data folder (one owner: folderOwner.ts) and checks its port before anything
 * else, then opens the accounts state and ledger, creates the engine with the ledger as its
 * CreditMeter (the engine frees reservations of tasks it finds interrupted while doing so), builds the
 * app and listens. Also used in-process by the tests, which may wrap the meter or engine to inject
 * failures.
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { catalogMessage, CrispError } from '../contract/errorCatalog.js';
import type { AccountStore } from '../service/accounts/accountStore.js';
import { openAccounts, type AccountsBackend } from '../service/accounts/openAccounts.js';
import type { UpscalingEngine } from '../service/api.js';
import type { CreditMeter } from '../service/credits/meter.js';
import type { Ledger } from '../service/credits/ledger.js';
import { DEFAULT_LEDGER_RETENTION_MS } from '../service/credits/ledgerCompaction.js';
import type { Engine, EngineOptions } from '../service/engine.js';
import { createEmbeddedEngine } from '../service/embeddedEngine.js';
import { createPostgresEngine } from '../service/postgresEngine.js';
import { SERVER_USER_LIMITS } from '../service/limits.js';
import { createUrlSigner, loadOrCreateSecret } from '../service/security/urlSigner.js';
import { loadOrCreateSharedSecret } from '../service/db/sharedSecret.js';
import { isStorageUnavailable, s3CodeOf, type ObjectStore } from '../service/storage/objectStore.js';
import { openObjectStore } from '../service/storage/openObjectStore.js';
import { assertNotOwned, takeFolder, type FolderOwnership } from '../service/storage/folderOwner.js';
import { buildApp } from './app.js';
import type { ServerHealth } from './routes/health.js';
import { createDownloadLinks, downloadLinkDecorator } from './downloadLinks.js';
import { DEFAULT_SERVER_LIMITS, type ServerConfig } from './options.js';

export interface RunningServer {
  app: FastifyInstance;
  engine: Engine;
  accounts: AccountStore;
  ledger: Ledger;
  /** Base URL the server answers on (publicUrl). */
  url: string;
  close(): Promise<void>;
}

export interface ServerOverrides {
  /** Wraps the meter the engine and routes use (tests: a failing dependency for the 500 rows). */
  meter?: (ledger: Ledger) => CreditMeter;
  /** Wraps the engine the routes use. */
  engine?: (engine: Engine) => UpscalingEngine;
}

/** Thrown before anything is opened when the port is taken: the message is the sentence `crisp serve` prints. */
export class PortInUseError extends CrispError {
  override readonly name = 'PortInUseError';
  constructor(host: string, port: number) {
    const params = { host, port: String(port) };
    super('port-in-use', catalogMessage('port-in-use', params), { params });
  }
}

/**
 * Refuses a taken port before the engine is built (a server started by mistake on a busy port must not touch
 * anything first). The port is only checked, not held: app.listen may still lose a race, as any server can.
 */
async function assertPortFree(host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const s = createServer();
    s.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'EADDRINUSE' ? new PortInUseError(host, port) : e));
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve()));
  });
}

/**
 * The embedded server owns its folders (tasks, accounts) outright: it takes them before it opens or recovers
 * anything, and a second process refuses, naming the owner (folderOwner.ts). With `--db` the folders are shared
 * by design; such a server only refuses folders an embedded server owns.
 */
async function ownFolders(config: ServerConfig, dataDir: string, storageDir: string, port: number) {
  const owned: FolderOwnership[] = [];
  if (config.db) {
    await assertNotOwned(dataDir, '--data');
    if (!config.objects && storageDir !== dataDir) await assertNotOwned(storageDir, '--storage');
    return owned;
  }
  try {
    owned.push(await takeFolder(dataDir, { role: 'crisp serve', port }));
    if (storageDir !== dataDir) owned.push(await takeFolder(storageDir, { role: 'crisp serve', port }, '--storage'));
  } catch (e) {
    await releaseAll(owned);
    throw e;
  }
  return owned;
}

async function releaseAll(owned: FolderOwnership[]): Promise<void> {
  for (const o of owned) await o.release();
}

/** Port 0 must be resolved before the engine exists, because part URLs embed the public origin. */
async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function originFor(host: string, port: number): string {
  const h = host.includes(':') ? `[${host}]` : host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${h}:${port}`;
}

export async function startServer(config: ServerConfig, overrides: ServerOverrides = {}): Promise<RunningServer> {
  const dataDir = path.resolve(config.dataDir);
  // Objects (tasks, uploads, outputs) and the signing secret: a shared directory when several processes serve.
  const storageDir = path.resolve(config.storageDir ?? config.dataDir);
  const serverLimits = { ...DEFAULT_SERVER_LIMITS, ...config.serverLimits };
  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const publicUrl = (config.publicUrl ?? originFor(config.host, port)).replace(/\/$/, '');

  // Nothing is opened, recovered or resumed before this process owns its folders and knows its port is free.
  const owned = await ownFolders(config, dataDir, storageDir, port);
  let stores: AccountsBackend;
  try {
    if (config.port !== 0) await assertPortFree(config.host, port);
    stores = await openAccounts({ dataDir, ...(config.db ? { db: config.db } : {}) });
  } catch (e) {
    await releaseAll(owned);
    throw e;
  }
  const stopCompaction = scheduleCompaction(stores, config.ledgerRetentionMs ?? DEFAULT_LEDGER_RETENTION_MS);
  let engine: Engine | undefined;
  let objects: ObjectStore | undefined;
  try {
    const { accounts, ledger } = stores;
    const meter = overrides.meter ? overrides.meter(ledger) : ledger;
    if (config.objects && !stores.pool)
      throw new Error('--storage s3://… needs --db: the processes sharing a bucket meet in the database');
    // Filled in once the app (and its logger) exists; until then details go to stderr.
    let operatorLog = (detail: string) => console.warn(detail);
    objects = config.objects
      ? await openObjectStore(config.objects, { onRetry: (detail) => operatorLog(`storage: ${detail}`) })
      : undefined;
    // With a bucket there is no shared directory for secret.key: every process reads the one in the database.
    const secret =
      objects && stores.pool ? await loadOrCreateSharedSecret(stores.pool) : await loadOrCreateSecret(storageDir);
    const links = createDownloadLinks(createUrlSigner(secret), publicUrl, serverLimits.downloadLinkTtlMs);
    // Settings every deployment takes; the deployment (embedded, or PostgreSQL with a shared folder or a
    // bucket) is picked below, each from its own composition.
    const common: EngineOptions = {
      operatorLog: (detail) => operatorLog(detail),
      // With a bucket, the data directory only holds this process's working copies.
      dataDir: objects ? dataDir : storageDir,
      ...(config.now ? { now: config.now } : {}),
      credits: meter,
      allowPrivateUrls: config.allowPrivateUrls,
      limits: { ...SERVER_USER_LIMITS, ...config.engineLimits },
      ...(config.modelDirs ? { modelDirs: config.modelDirs } : {}),
      ...(config.executionProvider ? { executionProvider: config.executionProvider } : {}),
      ...(config.threads ? { threads: config.threads } : {}),
      ...(config.face ? { face: config.face } : {}),
      decorateFile: downloadLinkDecorator(links),
    };
    const created = stores.pool
      ? await createPostgresEngine({
          ...common,
          queue: {
            pool: stores.pool,
            workers: config.workers ?? 1,
            ...(config.leaseMs ? { leaseMs: config.leaseMs } : {}),
          },
          ...(objects ? { objects } : {}),
          publicUrl,
        })
      : await createEmbeddedEngine({
          ...common,
          publicUrl,
          // A task cut off by a crash or restart runs again from its stored inputs; its reservation stands.
          resumeInterrupted: true,
        });
    engine = created;
    const routesEngine = overrides.engine ? overrides.engine(created) : created;
    const health: ServerHealth = {
      notReadyReason: () => notReadyReason(stores, objects ? dataDir : storageDir, objects),
      stats: () => created.stats(),
      metricsToken: config.metricsToken,
    };
    const app = await buildApp({
      health,
      ...(stores.rateLimitStore ? { rateLimitStore: stores.rateLimitStore(serverLimits.rateLimitWindowMs) } : {}),
      engine: routesEngine,
      accounts,
      meter,
      links,
      engineLimits: created.limits,
      serverLimits,
      incomingDir: path.join(objects ? dataDir : storageDir, 'incoming'),
      ...(config.logLevel ? { logLevel: config.logLevel } : {}),
      ...(config.logFormat ? { logFormat: config.logFormat } : {}),
      ...(config.logStream ? { logStream: config.logStream } : {}),
    });
    operatorLog = (detail) => app.log.warn({ detail }, 'detail withheld from an API user');
    await app.listen({ host: config.host, port });
    return running(app, created, stores, publicUrl, stopCompaction, owned, objects);
  } catch (e) {
    await engine?.close();
    stopCompaction();
    objects?.close();
    await stores.close();
    await releaseAll(owned);
    throw e;
  }
}

/** Ready = the accounts store answers, the bucket (if any) answers and the data directory takes a write. */
async function notReadyReason(
  stores: AccountsBackend,
  dataDir: string,
  objects?: ObjectStore,
): Promise<string | undefined> {
  try {
    await stores.ping();
  } catch (e) {
    return `the accounts store is not reachable: ${(e as Error).message}`;
  }
  try {
    await objects?.ping();
  } catch (e) {
    // /readyz is unauthenticated: the reason names no address and repeats none of the bucket's own words.
    return isStorageUnavailable(e)
      ? 'the object storage is not reachable: no answer in time'
      : `the object storage is not reachable: it refused the probe (${s3CodeOf(e) ?? 'error'})`;
  }
  try {
    await access(dataDir, constants.W_OK);
  } catch {
    return `the data directory ${dataDir} is not writable`;
  }
  return undefined;
}

/** Ended charges leave the JSON state file hourly (PostgreSQL keeps them in a table: nothing to compact). */
function scheduleCompaction(stores: AccountsBackend, retentionMs: number): () => void {
  const compact = stores.compact;
  if (!compact) return () => {};
  const run = () => void compact(retentionMs).catch(() => undefined);
  run();
  const timer = setInterval(run, 3_600_000);
  timer.unref();
  return () => clearInterval(timer);
}

function running(
  app: FastifyInstance,
  engine: Engine,
  stores: AccountsBackend,
  url: string,
  stopCompaction: () => void,
  owned: FolderOwnership[],
  objects?: ObjectStore,
): RunningServer {
  let closed = false;
  return {
    app,
    engine,
    accounts: stores.accounts,
    ledger: stores.ledger,
    url,
    async close() {
      if (closed) return;
      closed = true;
      stopCompaction();
      await app.close();
      await engine.close();
      await stores.close();
      objects?.close();
      await releaseAll(owned);
    },
  };
}
