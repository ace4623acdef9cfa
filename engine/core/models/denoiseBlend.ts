/**
 * Denoise strength for realesr-general-x4v3, done the way Real-ESRGAN's `-dn` does it: deep network
 * interpolation of the weights, w = s·A + (1−s)·B with A = realesr-general-x4v3 and
 * B = realesr-general-wdn-x4v3 (dni_weight = [s, 1−s]). We work on the two ONNX files directly:
 * the output is A's bytes with every float initializer's raw_data overwritten in place, so the graph
 * is untouched and only the weights change. Results are cached per strength value.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { ONNX_FLOAT, readOnnx } from '../onnx/onnxReader.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class DenoiseBlendError extends CrispError {
  override readonly name = 'DenoiseBlendError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

function assertStrength(s: number): void {
  if (!Number.isFinite(s) || s < 0 || s > 1)
    throw new DenoiseBlendError(`denoise strength must be between 0 and 1, got ${s}`);
}

/**
 * Blends the initializers of two ONNX models with identical graphs. s = 1 returns A's weights and
 * s = 0 B's, byte for byte (computing 1·a + 0·b would turn a −0 weight into +0).
 */
export function blendOnnxWeights(a: Uint8Array, b: Uint8Array, s: number): Uint8Array {
  assertStrength(s);
  const ma = readOnnx(a);
  const mb = readOnnx(b);
  const bByName = new Map(mb.initializers.map((t) => [t.name, t]));
  if (ma.initializers.length !== mb.initializers.length || ma.nodes.length !== mb.nodes.length) {
    throw new DenoiseBlendError('the two models do not have the same graph');
  }
  const out = new Uint8Array(a);
  // torch does this in float32: fround(fround(s·a) + fround((1−s)·b)), with s itself cast to float32.
  const sa = Math.fround(s);
  const sb = Math.fround(1 - s);
  for (const ta of ma.initializers) {
    const tb = bByName.get(ta.name);
    if (
      !tb ||
      tb.dataType !== ta.dataType ||
      tb.dims.join(',') !== ta.dims.join(',') ||
      tb.data.length !== ta.data.length
    ) {
      throw new DenoiseBlendError(`initializer ${ta.name} differs in shape or type between the two models`);
    }
    if (ta.dataType !== ONNX_FLOAT) {
      if (!Buffer.from(ta.data).equals(Buffer.from(tb.data)))
        throw new DenoiseBlendError(`non-float initializer ${ta.name} differs`);
      continue;
    }
    if (ta.rawOffset === null) throw new DenoiseBlendError(`initializer ${ta.name} is not stored as raw_data`);
    if (s === 1) continue;
    if (s === 0) {
      out.set(tb.data, ta.rawOffset);
      continue;
    }
    const dvA = new DataView(ta.data.buffer, ta.data.byteOffset, ta.data.byteLength);
    const dvB = new DataView(tb.data.buffer, tb.data.byteOffset, tb.data.byteLength);
    const dvO = new DataView(out.buffer, out.byteOffset + ta.rawOffset, ta.data.byteLength);
    for (let i = 0; i < ta.data.byteLength; i += 4) {
      const w = Math.fround(Math.fround(sa * dvA.getFloat32(i, true)) + Math.fround(sb * dvB.getFloat32(i, true)));
      dvO.setFloat32(i, w, true);
    }
  }
  return out;
}

export interface DenoiseModelOptions {
  /** realesr-general-x4v3.onnx (A, used at strength 1). */
  generalPath: string;
  /** realesr-general-wdn-x4v3.onnx (B, used at strength 0). */
  wdnPath: string;
  cacheDir: string;
}

/** Canonical cache key for a strength: at most 4 decimals, so 0.5 and 0.50000001 share a file. */
export function denoiseCacheName(strength: number): string {
  assertStrength(strength);
  return `realesr-general-x4v3-dn${strength.toFixed(4)}.onnx`;
}

/** Returns the path of the blended model for `strength`, building and caching it on first use. */
export async function denoiseModel(strength: number, opts: DenoiseModelOptions): Promise<string> {
  const s = Number(strength.toFixed(4));
  const target = path.join(opts.cacheDir, denoiseCacheName(s));
  try {
    if ((await stat(target)).size > 0) return target;
  } catch {
    // not cached yet
  }
  const [a, b] = await Promise.all([readFile(opts.generalPath), readFile(opts.wdnPath)]);
  const blended = blendOnnxWeights(a, b, s);
  await mkdir(opts.cacheDir, { recursive: true });
  // temp + rename so a concurrent reader never sees half a model.
  const tmp = `${target}.${randomUUID()}.tmp`;
  try {
    await writeFile(tmp, blended);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return target;
}
