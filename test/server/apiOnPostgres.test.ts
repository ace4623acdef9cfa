/**
 * The HTTP contract suite (api.test.ts) again, on `--db` PostgreSQL: users and the ledger in the database,
 * tasks queued as jobs and claimed by the server's own worker. Same tests, same expected bytes.
 */
import { suite } from './suiteStore.js';

suite.store = 'postgres';
await import('./api.test.js');
