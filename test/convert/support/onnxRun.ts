/** Test-only helpers: run an ONNX model with onnxruntime-node and load real image patches. */
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';

export async function runOnnx(
  model: Uint8Array | string,
  input: Float32Array,
  dims: number[],
): Promise<{ dims: readonly number[]; data: Float32Array }> {
  const session =
    typeof model === 'string' ? await ort.InferenceSession.create(model) : await ort.InferenceSession.create(model);
  try {
    const out = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', input, dims) });
    const t = out[session.outputNames[0]!]!;
    return { dims: t.dims, data: t.data as Float32Array };
  } finally {
    await session.release();
  }
}

/** A size×size RGB crop of an image as planar float32 0..1 ([1,3,size,size]). */
export async function imagePatch(file: string, size: number, left = 0, top = 0): Promise<Float32Array> {
  const { data, info } = await sharp(file)
    .removeAlpha()
    .extract({ left, top, width: size, height: size })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const out = new Float32Array(3 * size * size);
  for (let i = 0; i < size * size; i++)
    for (let c = 0; c < 3; c++) out[c * size * size + i] = data[i * info.channels + c]! / 255;
  return out;
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
