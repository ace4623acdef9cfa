/**
 * Atomic file writes live in engine/core/atomicFile.ts (core writes its outputs and int8 variants with them,
 * and core may not import the service layer); the service's modules keep importing them from here.
 */
export * from '../../core/atomicFile.js';
