/**
 * The server's public entry (`crisp serve`): app/ and electron/ import engine/server only from here
 * (docs/architecture.md).
 *
 * Light, exported as they are (no npm package is loaded by importing this file):
 *   options.ts (ServerConfig, the server's limits and their defaults), logOptions.ts (log levels and formats).
 * Lazy, behind a loader that import()s the module (what it loads):
 *   loadServer  start.ts: startServer, which opens the accounts and the engine and listens (fastify, pg, sharp,
 *               undici, zod)
 */
export * from './options.js';
export * from './logOptions.js';

// The heavy module's types: erased, so they load nothing.
export type { RunningServer, ServerOverrides } from './start.js';

export const loadServer = () => import('./start.js');
