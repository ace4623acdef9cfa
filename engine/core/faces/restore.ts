/**
 * Restore: one aligned crop through a face-convention model — input 1×3×S×S float32 RGB in [−1, 1], first
 * output the same shape and range (GFPGAN's convention; S = 512). The output is clamped to [−1, 1].
 */
import type { GraphSession } from '../inference/index.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class FaceModelError extends CrispError {
  override readonly name = 'FaceModelError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

export async function restoreFace(
  model: GraphSession,
  crop: Float32Array,
  size: number,
  modelName: string,
): Promise<Float32Array> {
  const outputs = await model.run(crop, [1, 3, size, size]);
  const first = outputs.values().next().value;
  if (!first || first.dims.length !== 4 || first.dims[1] !== 3 || first.dims[2] !== size || first.dims[3] !== size) {
    const got = first ? `[${first.dims.join('×')}]` : 'no float32 output';
    throw new FaceModelError(
      `The face model ${modelName} answered ${got} for a 1×3×${size}×${size} face; a face model must return the same shape. Import a GFPGAN v1.3/v1.4 model instead.`,
    );
  }
  const out = first.data;
  for (let i = 0; i < out.length; i++) {
    const v = out[i]!;
    out[i] = v < -1 ? -1 : v > 1 ? 1 : Number.isNaN(v) ? 0 : v;
  }
  return out;
}
