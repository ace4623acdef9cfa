/**
 * `crisp models fetch gfpgan-1.4` (and 1.3): download the official release checkpoint with the resumable,
 * size- and sha256-checked downloader SR models use, convert it to the face convention in TypeScript
 * (convert/gfpgan.ts), run it once like an imported face model, and install `face/<file>` atomically.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { convertFaceBytes } from '../convert.js';
import { downloadToFile, FetchError, sha256File, type DownloadOptions } from './fetch.js';
import { FACE_DIR, type FaceCatalogEntry } from '../../core/faces/faceModels.js';
import { checkFaceModel } from './importFaceModel.js';

export interface FaceFetchOptions extends DownloadOptions {
  modelsDir: string;
  /** Where the .part file waits between attempts (default modelsDir/.downloads). */
  downloadDir?: string;
}

export async function fetchFaceModel(
  entry: FaceCatalogEntry,
  opts: FaceFetchOptions,
): Promise<{ name: string; path: string }> {
  const dir = opts.downloadDir ?? path.join(opts.modelsDir, '.downloads');
  const part = path.join(dir, `${path.basename(entry.file, '.onnx')}.${entry.download.format}.part`);
  await downloadToFile(entry.download.url, part, { ...opts, expectedSize: entry.download.size });
  const actual = await sha256File(part);
  if (actual !== entry.download.sha256.toLowerCase()) {
    await rm(part, { force: true });
    throw new FetchError(
      `sha256 mismatch for ${entry.name}: expected ${entry.download.sha256}, got ${actual}; the download was deleted and nothing was installed`,
    );
  }
  let onnx: Uint8Array;
  try {
    const bytes = await readFile(part);
    onnx = entry.download.format === 'onnx' ? bytes : (await convertFaceBytes(bytes, 'pth')).onnx;
    await checkFaceModel(onnx, entry.file);
  } catch (e) {
    // A complete download that will not convert is not worth resuming.
    await rm(part, { force: true });
    throw e;
  }
  const target = path.join(opts.modelsDir, FACE_DIR, entry.file);
  await mkdir(path.dirname(target), { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, onnx);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await rm(part, { force: true });
  return { name: entry.name, path: target };
}
