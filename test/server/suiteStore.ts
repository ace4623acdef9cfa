/**
 * Which store the HTTP contract suite (api.test.ts) runs on: the embedded default (accounts.json, tasks in
 * the data directory) when it runs as itself, or PostgreSQL with tasks as queued jobs when
 * apiOnPostgres.test.ts imports it — the same tests, every answer compared byte for byte, on both.
 * Each server of the PostgreSQL run gets a database of its own in one throwaway cluster.
 */
import type { ServerConfig } from '../../engine/server/options.js';
import type { ServerOverrides } from '../../engine/server/start.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { startTestServer, type TestServer } from './helpers.js';

export const suite: { store: 'json' | 'postgres' } = { store: 'json' };

let cluster: TempPostgres | undefined;
let databases = 0;

export async function suiteServer(
  config: Partial<ServerConfig> = {},
  overrides: ServerOverrides = {},
): Promise<TestServer> {
  if (suite.store === 'json') return startTestServer(config, overrides);
  cluster ??= await startTempPostgres();
  const db = await createDatabase(cluster.url, `crisp_suite_${++databases}`);
  return startTestServer({ db, ...config }, overrides);
}

/** Every task the server accepted has ended (with a queue, every task in its database). */
export async function idle(server: TestServer): Promise<void> {
  await server.engine.idle();
  if (suite.store === 'json') return;
  const until = Date.now() + 60_000;
  while ((await server.engine.stats()).unfinished > 0) {
    if (Date.now() > until) throw new Error('tasks still unfinished after 60 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopSuiteStore(): Promise<void> {
  await cluster?.stop();
  cluster = undefined;
}
