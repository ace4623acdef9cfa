/** The single source of truth for the upscaling contract: enums, shapes, request checks, the error catalog. */
export * from './enums.js';
export * from './shapes.js';
export * from './schemas.js';
export * from './errorCatalog.js';
export * from './errors.js';
export * from './parseRequest.js';
export * from './progress.js';
