/**
 * Align: the similarity transform of a face's five landmarks onto the FFHQ template, and the warp of the
 * image into the 512×512 crop a face restorer takes (planar float32 RGB in [−1, 1]).
 */
import { maxValue, type Raster } from '../pipeline/raster.js';
import type { DetectedFace } from './detect.js';
import { FACE_SIZE, FFHQ_TEMPLATE_512, invertAffine, similarityTransform, type Affine } from './geometry.js';

export interface AlignedFace {
  face: DetectedFace;
  /** Input pixel → crop pixel. */
  toFace: Affine;
  /** The crop: planar [3, size, size] RGB in [−1, 1]. */
  crop: Float32Array;
  size: number;
}

export function faceAffine(face: DetectedFace, size = FACE_SIZE): Affine {
  const k = size / FACE_SIZE;
  return similarityTransform(
    face.landmarks,
    FFHQ_TEMPLATE_512.map((p) => ({ x: p.x * k, y: p.y * k })),
  );
}

/**
 * Bilinear warp with edge (replicate) borders: a face cut by the image border is continued by its edge
 * pixels instead of a flat colour, which restorers take for part of the face less often.
 */
export function warpToFace(src: Raster, toFace: Affine, size = FACE_SIZE): Float32Array {
  const inv = invertAffine(toFace);
  const plane = size * size;
  const out = new Float32Array(3 * plane);
  const { width, height, channels, data } = src;
  const norm = 2 / maxValue(src.depth);
  const at = (x: number, y: number, c: number) => data[(y * width + x) * channels + c] ?? 0;
  for (let v = 0; v < size; v++) {
    for (let u = 0; u < size; u++) {
      let x = inv[0] * u + inv[1] * v + inv[2];
      let y = inv[3] * u + inv[4] * v + inv[5];
      x = x < 0 ? 0 : x > width - 1 ? width - 1 : x;
      y = y < 0 ? 0 : y > height - 1 ? height - 1 : y;
      const x0 = Math.floor(x),
        y0 = Math.floor(y);
      const x1 = Math.min(x0 + 1, width - 1),
        y1 = Math.min(y0 + 1, height - 1);
      const fx = x - x0,
        fy = y - y0;
      const d = v * size + u;
      for (let c = 0; c < 3; c++) {
        const top = at(x0, y0, c) * (1 - fx) + at(x1, y0, c) * fx;
        const bottom = at(x0, y1, c) * (1 - fx) + at(x1, y1, c) * fx;
        out[c * plane + d] = (top * (1 - fy) + bottom * fy) * norm - 1;
      }
    }
  }
  return out;
}

export function alignFace(src: Raster, face: DetectedFace, size = FACE_SIZE): AlignedFace {
  const toFace = faceAffine(face, size);
  return { face, toFace, crop: warpToFace(src, toFace, size), size };
}
