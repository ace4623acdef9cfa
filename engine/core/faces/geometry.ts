/**
 * Plain-data geometry for the face stage: points, 2×3 affine matrices and the FFHQ five-point template.
 * Matrices map (x, y) → (m[0]·x + m[1]·y + m[2], m[3]·x + m[4]·y + m[5]), with pixel centres at integer
 * coordinates (OpenCV's convention, which YuNet's landmarks and facexlib's template use too).
 */
export interface Point {
  x: number;
  y: number;
}

/** Row-major 2×3: [a, b, c, d, e, f]. */
export type Affine = readonly [number, number, number, number, number, number];

/** Side of the aligned face crop that GFPGAN-style restorers take and return. */
export const FACE_SIZE = 512;

/**
 * facexlib's FFHQ 512×512 template: the eye on the image's left, the other eye, nose tip, mouth corners
 * (same order as YuNet's landmarks).
 */
export const FFHQ_TEMPLATE_512: readonly Point[] = [
  { x: 192.98138, y: 239.94708 },
  { x: 318.90277, y: 240.1936 },
  { x: 256.63416, y: 314.01935 },
  { x: 201.26117, y: 371.41043 },
  { x: 313.08905, y: 371.15118 },
];

/**
 * Least-squares similarity (rotation + uniform scale + translation) taking `src` onto `dst`. Closed form:
 * with both point sets centred, a = Σ(s·d)/Σ|s|², b = Σ(s×d)/Σ|s|² for the matrix [[a, −b], [b, a]].
 */
export function similarityTransform(src: readonly Point[], dst: readonly Point[]): Affine {
  if (src.length !== dst.length || src.length < 2) throw new Error('similarityTransform needs two or more point pairs');
  const n = src.length;
  let sx = 0,
    sy = 0,
    dx = 0,
    dy = 0;
  for (let i = 0; i < n; i++) {
    sx += src[i]!.x;
    sy += src[i]!.y;
    dx += dst[i]!.x;
    dy += dst[i]!.y;
  }
  sx /= n;
  sy /= n;
  dx /= n;
  dy /= n;
  let dot = 0,
    cross = 0,
    norm = 0;
  for (let i = 0; i < n; i++) {
    const ux = src[i]!.x - sx,
      uy = src[i]!.y - sy;
    const vx = dst[i]!.x - dx,
      vy = dst[i]!.y - dy;
    dot += ux * vx + uy * vy;
    cross += ux * vy - uy * vx;
    norm += ux * ux + uy * uy;
  }
  if (norm === 0) throw new Error('similarityTransform: all source points coincide');
  const a = dot / norm;
  const b = cross / norm;
  return [a, -b, dx - (a * sx - b * sy), b, a, dy - (b * sx + a * sy)];
}

export function invertAffine(m: Affine): Affine {
  const [a, b, c, d, e, f] = m;
  const det = a * e - b * d;
  if (det === 0) throw new Error('invertAffine: singular matrix');
  const ia = e / det,
    ib = -b / det,
    id = -d / det,
    ie = a / det;
  return [ia, ib, -(ia * c + ib * f), id, ie, -(id * c + ie * f)];
}

export function applyAffine(m: Affine, p: Point): Point {
  return { x: m[0] * p.x + m[1] * p.y + m[2], y: m[3] * p.x + m[4] * p.y + m[5] };
}

/** m ∘ n: first n, then m. */
export function composeAffine(m: Affine, n: Affine): Affine {
  return [
    m[0] * n[0] + m[1] * n[3],
    m[0] * n[1] + m[1] * n[4],
    m[0] * n[2] + m[1] * n[5] + m[2],
    m[3] * n[0] + m[4] * n[3],
    m[3] * n[1] + m[4] * n[4],
    m[3] * n[2] + m[4] * n[5] + m[5],
  ];
}

/**
 * Output pixel → input pixel for an integer upscale: input pixel i covers output pixels [s·i, s·i + s), whose
 * centre is s·i + (s − 1)/2 (the same grid the tiles and the Lanczos resize use).
 */
export function outputToInput(scale: number): Affine {
  return [1 / scale, 0, -(scale - 1) / (2 * scale), 0, 1 / scale, -(scale - 1) / (2 * scale)];
}
