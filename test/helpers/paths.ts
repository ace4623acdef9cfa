import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SHARED = path.resolve(REPO_ROOT, '../shared');

/** Real weights: CRISP_MODELS_DIR if set, else ../shared/models (CI has it beside the clone). */
export const MODELS_DIR = process.env.CRISP_MODELS_DIR ?? path.join(SHARED, 'models');
export const ONNX_DIR = existsSync(path.join(MODELS_DIR, 'onnx')) ? path.join(MODELS_DIR, 'onnx') : MODELS_DIR;
export const IMAGES_DIR = path.join(SHARED, 'images');
