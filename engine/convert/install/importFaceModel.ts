/**
 * `crisp models import FILE --face`: installs a face restorer in the face convention as `custom:<name>`
 * (<modelsDir>/face/custom-<name>.onnx). The file is run once on a 1×3×512×512 face before it is installed:
 * it must take that one input and answer the same shape with values in about [−1, 1].
 */
import { readFile, rename, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { convertFaceBytes } from '../convert.js';
import { runModelBytes } from '../../core/inference/index.js';
import { FACE_DIR, customFaceFile } from '../../core/faces/faceModels.js';
import { FACE_SIZE } from '../../core/faces/geometry.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class FaceImportError extends CrispError {
  override readonly name = 'FaceImportError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

const NAME_RE = /^[A-Za-z0-9][\w.-]{0,63}$/;

/** A smooth test face: a gradient over [−0.9, 0.9] in each channel. */
function probeFace(): Float32Array {
  const plane = FACE_SIZE * FACE_SIZE;
  const t = new Float32Array(3 * plane);
  for (let c = 0; c < 3; c++)
    for (let i = 0; i < plane; i++)
      t[c * plane + i] = ((((i % FACE_SIZE) + Math.floor(i / FACE_SIZE) * (c + 1)) % 256) / 255) * 1.8 - 0.9;
  return t;
}

/**
 * Runs a face model once on a test face: one 1×3×512×512 input, the same shape out, values in about [−1, 1].
 * Throws FaceImportError saying what is wrong.
 */
export async function checkFaceModel(bytes: Uint8Array, base: string): Promise<void> {
  let out: { dims: readonly number[]; data: Float32Array };
  try {
    out = await runModelBytes(bytes, probeFace(), [1, 3, FACE_SIZE, FACE_SIZE]);
  } catch (e) {
    const why = ((e instanceof Error ? e.message : String(e)).split('\n').pop() ?? '').trim();
    throw new FaceImportError(
      `${base} is not a face model Crisp can run (it must take one 1×3×512×512 float input): ${why}`,
    );
  }
  if (out.dims.join('×') !== `1×3×${FACE_SIZE}×${FACE_SIZE}`) {
    throw new FaceImportError(
      `${base} answered [${out.dims.join('×')}] for a 1×3×512×512 face; a face model returns the same shape.`,
    );
  }
  let worst = 0;
  for (const v of out.data) worst = Math.max(worst, Number.isFinite(v) ? Math.abs(v) : Infinity);
  // GFPGAN ends without tanh, so a little overshoot is normal; far beyond means another value range.
  if (worst > 1.5)
    throw new FaceImportError(
      `${base} answered values up to ${worst.toFixed(2)}; a face model answers RGB in [-1, 1].`,
    );
}

export async function importFaceModel(
  file: string,
  opts: { modelsDir: string; name?: string },
): Promise<{ name: string; path: string }> {
  const base = path.basename(file);
  const ext = path.extname(file).toLowerCase();
  const checkpoint = ext === '.pth' || ext === '.pt' || ext === '.safetensors';
  if (!checkpoint && ext !== '.onnx')
    throw new FaceImportError(
      `${base}: a face model must be a GFPGAN v1.3/v1.4 .pth or an .onnx file in the face convention (1×3×512×512 RGB in [-1, 1]).`,
    );
  const name =
    opts.name ??
    path
      .basename(file, path.extname(file))
      .replace(/[^\w.-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '');
  if (!NAME_RE.test(name))
    throw new FaceImportError(`"${name}" cannot be a model name: use letters, digits, '.', '_' or '-' (up to 64).`);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch {
    throw new FaceImportError(`${base} could not be read: check the path.`);
  }
  if (checkpoint) {
    // GFPGANv1Clean → the face-convention graph, then the same probe as any ONNX face model.
    try {
      bytes = (await convertFaceBytes(bytes, ext === '.safetensors' ? 'safetensors' : 'pth')).onnx;
    } catch (e) {
      throw new FaceImportError(
        `${base}: ${((e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '').trim()}`,
      );
    }
  }
  await checkFaceModel(bytes, base);
  const dir = path.join(opts.modelsDir, FACE_DIR);
  const target = path.join(dir, customFaceFile(name));
  if (existsSync(target))
    throw new FaceImportError(
      `A face model named custom:${name} is already installed (${target}); choose another --name.`,
    );
  await mkdir(dir, { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, bytes);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return { name: `custom:${name}`, path: target };
}
