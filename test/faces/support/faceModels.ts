/**
 * Face-convention ONNX models built in the test with the repo's ONNX writer: 1×3×512×512 RGB in [−1, 1] in,
 * the same shape out. They stand in for GFPGAN, whose weights cannot be downloaded here.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { GraphBuilder } from '../../../engine/convert/graph/onnxWriter.js';

/** Output = input: the stage must then change nothing beyond the warp there and back. */
export function identityFaceModel(): Uint8Array {
  const g = new GraphBuilder('face-identity');
  g.node('Identity', ['input'], {}, 'output');
  return g.toBytes();
}

/** Output = one colour everywhere (RGB in [−1, 1]): shows exactly which pixels the paste touches. */
export function constantFaceModel(rgb: [number, number, number]): Uint8Array {
  const g = new GraphBuilder('face-constant');
  const zero = g.weight('zero', [1], new Float32Array([0]));
  const colour = g.weight('colour', [1, 3, 1, 1], new Float32Array(rgb));
  const z = g.node('Mul', ['input', zero]);
  g.node('Add', [z, colour], {}, 'output');
  return g.toBytes();
}

/** Output = −input: a visible but position-preserving change (a mirror-free negative). */
export function negativeFaceModel(): Uint8Array {
  const g = new GraphBuilder('face-negative');
  g.node('Neg', ['input'], {}, 'output');
  return g.toBytes();
}

/** A 2× upscaler shape: not a face model (the stage must refuse it with a clear sentence). */
export function wrongShapeFaceModel(): Uint8Array {
  const g = new GraphBuilder('face-wrong');
  g.resizeNearest('input', 2, 2, 'output');
  return g.toBytes();
}

export function writeModel(dir: string, name: string, bytes: Uint8Array): string {
  const file = path.join(dir, name);
  writeFileSync(file, bytes);
  return file;
}
