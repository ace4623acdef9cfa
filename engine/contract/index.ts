/** The single source of truth for the upscaling contract: enums, shapes, validation, errors. */
export * from './enums.js';
export * from './shapes.js';
export * from './schemas.js';
export * from './errors.js';
export * from './validate.js';
export * from './progress.js';
