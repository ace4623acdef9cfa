/**
 * Installs an ONNX model into a models directory: smoke-test first (a 16×16 input must give a
 * finite output of scale × the size), then write to a temporary file in the same directory and
 * rename, so a reader never sees a partial model and a broken model never lands.
 * The smoke test runs through engine/core/inference's one-off runner (a model being installed is not a
 * catalog file yet); callers may inject `run` instead.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readOnnx } from '../../core/onnx/onnxReader.js';
import { runModelBytes } from '../../core/inference/index.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class ModelInstallError extends CrispError {
  override readonly name = 'ModelInstallError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

export interface SmokeOutput {
  dims: readonly number[];
  data: Float32Array;
}

/** Runs a model once on a [1,C,size,size] input. */
export type SmokeRunner = (onnx: Uint8Array, input: Float32Array, dims: readonly number[]) => Promise<SmokeOutput>;

export interface SmokeTestOptions {
  /** Side of the square test input (default 16). */
  size?: number;
  /** Refuse the model unless it upscales by exactly this factor. */
  expectedScale?: number;
  run?: SmokeRunner;
}

export interface SmokeTestResult {
  scale: number;
  inputChannels: number;
}

function inputChannelsOf(onnx: Uint8Array): number {
  let c: number | string | null | undefined;
  try {
    c = readOnnx(onnx).inputs[0]?.shape[1];
  } catch (e) {
    throw new ModelInstallError(`not a valid ONNX model: ${(e as Error).message}`);
  }
  // A symbolic channel count is unusual; image models take RGB.
  return typeof c === 'number' && c > 0 ? c : 3;
}

/** Runs the model on a small gradient image; returns the detected scale or throws ModelInstallError. */
export async function smokeTest(onnx: Uint8Array, opts: SmokeTestOptions = {}): Promise<SmokeTestResult> {
  const size = opts.size ?? 16;
  const c = inputChannelsOf(onnx);
  const input = new Float32Array(c * size * size);
  for (let i = 0; i < input.length; i++) input[i] = ((i * 37) % 251) / 250;
  let out: SmokeOutput;
  try {
    out = await (opts.run ?? runModelBytes)(onnx, input, [1, c, size, size]);
  } catch (e) {
    if (e instanceof ModelInstallError) throw e;
    throw new ModelInstallError(`model failed its test run: ${(e as Error).message.split('\n')[0]}`);
  }
  const [n, oc, oh, ow] = out.dims;
  if (
    out.dims.length !== 4 ||
    n !== 1 ||
    oc !== c ||
    oh === undefined ||
    ow === undefined ||
    oh !== ow ||
    oh % size !== 0 ||
    oh < size
  ) {
    throw new ModelInstallError(
      `model output has shape [${out.dims.join(',')}] for a [1,${c},${size},${size}] input; expected an integer upscale`,
    );
  }
  const scale = oh / size;
  if (opts.expectedScale !== undefined && scale !== opts.expectedScale) {
    throw new ModelInstallError(`model upscales ×${scale}, expected ×${opts.expectedScale}`);
  }
  for (let i = 0; i < out.data.length; i++) {
    if (!Number.isFinite(out.data[i]!)) throw new ModelInstallError('model output contains NaN or infinite values');
  }
  return { scale, inputChannels: c };
}

/** A bare file name ending in .onnx: joined onto the models dir, so a separator would escape it. */
export function assertModelFileName(file: string): void {
  if (!/^[\w.-]+\.onnx$/.test(file) || file.startsWith('.'))
    throw new ModelInstallError(`invalid model file name ${JSON.stringify(file)}`);
}

export interface InstallOptions extends SmokeTestOptions {
  modelsDir: string;
  /** File name inside modelsDir, e.g. "realesr-general-x4v3.onnx". */
  fileName: string;
}

export interface InstalledModel {
  path: string;
  scale: number;
  bytes: number;
}

/** Smoke-tests then atomically writes `onnx` to modelsDir/fileName (replacing any previous file). */
export async function installModel(onnx: Uint8Array, opts: InstallOptions): Promise<InstalledModel> {
  assertModelFileName(opts.fileName);
  const { scale } = await smokeTest(onnx, opts);
  await mkdir(opts.modelsDir, { recursive: true });
  const target = path.join(opts.modelsDir, opts.fileName);
  // Same directory as the target so rename() is atomic (no cross-device move).
  const tmp = path.join(opts.modelsDir, `.${opts.fileName}.${randomUUID()}.tmp`);
  try {
    await writeFile(tmp, onnx);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new ModelInstallError(`could not install ${opts.fileName}: ${(e as Error).message}`);
  }
  return { path: target, scale, bytes: onnx.length };
}
