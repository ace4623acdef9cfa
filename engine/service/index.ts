/**
 * The service's public entry: app/ and electron/ import engine/service only from here (docs/architecture.md).
 *
 * Light, exported as they are (no npm package is loaded by importing this file, nor the service's engine or
 * task store — the desktop's local path never loads those):
 *   limits.ts (the engine's and the server's limits), credits/priceTable.ts (prices), storage/atomicFile.ts
 *   and storage/mutex.ts (atomic writes, locks), storage/folderOwner.ts (who owns a data folder: the check
 *   `crisp worker` makes before it shares one), storage/objectStore.ts (S3 locations) and storage/openObjectStore.ts
 *   (loads the S3 client itself when called), tasks/outputNames.ts (the output namer), tasks/userMessage.ts (an
 *   error's sentence), DEFAULT_LEASE_MS (tasks/queueWorker.ts); and the heavy modules' types, as types.
 * Lazy, behind a loader that import()s the module (what it loads):
 *   loadAccounts        accounts/openAccounts.ts: openAccounts, the file or PostgreSQL accounts (pg)
 *   loadPostgresEngine  postgresEngine.ts: createPostgresEngine, the queue's engine (sharp, undici, zod)
 * (`crisp serve`'s embedded engine is built by engine/server, behind the server's own loadServer.)
 */
export * from './limits.js';
export * from './credits/priceTable.js';
export * from './storage/atomicFile.js';
export * from './storage/mutex.js';
export { assertNotOwned, FolderInUseError, OWNER_LOCK } from './storage/folderOwner.js';
export * from './storage/objectStore.js';
export * from './storage/openObjectStore.js';
export * from './tasks/outputNames.js';
export * from './tasks/userMessage.js';
export { DEFAULT_LEASE_MS } from './tasks/queueWorker.js';

// The heavy modules' types: erased, so they load nothing.
export type { Caller, OutputFile, StartTaskInput, StoredPart, UpscalingEngine } from './api.js';
export type { Engine, EngineOptions } from './engine.js';
export type { EmbeddedEngineOptions } from './embeddedEngine.js';
export type { PostgresEngineOptions } from './postgresEngine.js';
export type { Account, AccountStore, NewAccount } from './accounts/accountStore.js';
export type { AccountsBackend, AccountsLocation } from './accounts/openAccounts.js';
export type { Pool } from './db/postgres.js';

export const loadAccounts = () => import('./accounts/openAccounts.js');
export const loadPostgresEngine = () => import('./postgresEngine.js');
