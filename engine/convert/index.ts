/**
 * convert: getting models in — downloads, imports, PyTorch checkpoints and ncnn models converted to ONNX in
 * TypeScript, int8 builds. It sits above core (it reads core's ONNX modules, runs a model once to check it,
 * writes core's model folders and registry) and nothing in an upscale loads it: core resolves and runs what
 * this part installed.
 *
 * This file is the part's public entry: app/ and electron/ import it only from here (docs/architecture.md).
 * Light, exported as they are: the options' and results' types, as types.
 * Lazy, behind a loader that import()s the module (what it loads):
 *   loadConvert        convert.ts: checkpoints and ncnn models to ONNX (yauzl, and the converters' code)
 *   loadModelFetch     install/fetch.ts: download, convert and install catalog models (undici, onnxruntime, zod)
 *   loadModelImport    install/importModel.ts: import a weights file as a custom model (yauzl, onnxruntime, zod)
 *   loadFaceFetch      install/fetchFaceModel.ts: download a GFPGAN release (undici, onnxruntime, zod)
 *   loadFaceImport     install/importFaceModel.ts: import a face restorer (onnxruntime, zod)
 *   loadCalibrationSet int8/calibrationSet.ts (sharp)
 *   loadInt8Build      int8/int8Build.ts: makeInt8Variant (sharp, onnxruntime, zod)
 */
export type { Architecture, ArchSpec, ArchTiling } from './architectures/architecture.js';
export type { AnyConverted, ConvertedModel, ConvertOptions, SourceFormat } from './convert.js';
export type { FetchOptions, FetchOutcome, FetchTarget } from './install/fetch.js';
export type { ImportOptions } from './install/importModel.js';

export const loadConvert = () => import('./convert.js');
export const loadModelFetch = () => import('./install/fetch.js');
export const loadModelImport = () => import('./install/importModel.js');
export const loadFaceFetch = () => import('./install/fetchFaceModel.js');
export const loadFaceImport = () => import('./install/importFaceModel.js');
export const loadCalibrationSet = () => import('./int8/calibrationSet.js');
export const loadInt8Build = () => import('./int8/int8Build.js');
