/**
 * The contract's public entry: the single source of truth for the upscaling contract — enums, shapes, request
 * checks, the error catalog. app/ and electron/ import the contract only from here (docs/architecture.md).
 *
 * Light, exported as they are (plain data and code, no npm package):
 *   enums.ts (model names, scales, formats, statuses), shapes.ts (the bodies' types, success()),
 *   errorCatalog.ts (CrispError and the catalog), errors.ts (the spec's errors), progress.ts,
 *   fileNames.ts (sanitizeFileName), geometry.ts (exact output sizes).
 * Lazy, behind a loader (they build zod objects when they load):
 *   loadSchemas()        → schemas.ts: every body as a zod object (answer parsing, the server's JSON Schemas);
 *   loadRequestParsers() → parseRequest.ts: parseStartTask, parseTaskSettings, parseGetUploadUrl, …
 *   Their types are exported here as types.
 * Why the split: the compiled CLI's first module graph (out/cli/main.js) reaches this entry — every error
 * sentence is a CrispError, and the option tables name the contract's enums — and must load no npm package but
 * commander (test/cli/firstMinutes.test.ts), so zod waits until a command parses a request or an answer.
 */
export * from './enums.js';
export * from './shapes.js';
export * from './errorCatalog.js';
export * from './errors.js';
export * from './progress.js';
export * from './geometry.js';
export { sanitizeFileName } from './fileNames.js';

export type { ContractIssueParams, TaskSettingsOptions } from './schemas.js';
export type { StartTaskLimits, UploadLimits } from './parseRequest.js';

/** The contract's bodies as zod objects (loads zod). */
export const loadSchemas = () => import('./schemas.js');
/** The contract's request parsers, refusing in the contract's words (loads zod). */
export const loadRequestParsers = () => import('./parseRequest.js');
