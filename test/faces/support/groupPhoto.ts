/**
 * Group pictures composed at test time from the benchmark photos with faces (set5/set14): each portrait is
 * resized, optionally rotated, and placed on a grey canvas (possibly hanging over the border). The expected
 * face centre is the portrait's own detected landmark centre carried through the same placement, so
 * placement checks do not trust the stage's own geometry.
 */
import path from 'node:path';
import sharp, { type OverlayOptions } from 'sharp';
import type { Point } from '../../../engine/core/faces/geometry.js';
import { IMAGES_DIR } from '../../helpers/paths.js';

export interface Placement {
  /** e.g. 'set5/woman' */
  image: string;
  /** Width of the placed portrait before rotation (px). */
  width: number;
  /** Part of the portrait to use (small faces in a large photo: man, barbara). */
  crop?: { left: number; top: number; width: number; height: number };
  /** Degrees, clockwise (sharp's convention). */
  angle?: number;
  /** Top-left of the (rotated) portrait on the canvas; may be negative (hangs over the border). */
  left: number;
  top: number;
}

export interface PlacedFace {
  image: string;
  /** Where the portrait's landmark centre lands on the canvas. */
  centre: Point;
  /** Eye distance on the canvas. */
  eyes: number;
}

export const FACE_PHOTOS = [
  'set5/baby',
  'set5/head',
  'set5/woman',
  'set14/face',
  'set14/foreman',
  'set14/lenna',
  'set14/man',
  'set14/barbara',
  'set14/comic',
];

export function photoPath(image: string): string {
  return path.join(IMAGES_DIR, `${image}.png`);
}

export interface LandmarkCentre {
  centre: Point;
  eyes: number;
  width: number;
  height: number;
}

/**
 * Compose the picture; `landmarks(image)` gives each portrait's landmark centre and eye distance in its own
 * pixels (measured once on the portrait alone).
 */
export async function composeGroup(
  canvas: { width: number; height: number },
  placements: Placement[],
  landmarks: (image: string) => Promise<LandmarkCentre>,
): Promise<{ png: Buffer; faces: PlacedFace[] }> {
  const layers: OverlayOptions[] = [];
  const faces: PlacedFace[] = [];
  for (const p of placements) {
    const full = await landmarks(p.image);
    const c = p.crop ?? { left: 0, top: 0, width: full.width, height: full.height };
    const own = {
      centre: { x: full.centre.x - c.left, y: full.centre.y - c.top },
      eyes: full.eyes,
      width: c.width,
      height: c.height,
    };
    const k = p.width / own.width;
    const h = Math.round(own.height * k);
    const angle = p.angle ?? 0;
    let img = sharp(photoPath(p.image)).removeAlpha().extract(c).resize(p.width, h);
    img = sharp(await img.png().toBuffer());
    if (angle !== 0) img = img.rotate(angle, { background: { r: 128, g: 128, b: 128 } });
    const { data, info } = await img.png().toBuffer({ resolveWithObject: true });
    // Crop whatever hangs over the border so sharp's composite accepts it.
    const x0 = Math.max(0, -p.left),
      y0 = Math.max(0, -p.top);
    const x1 = Math.min(info.width, canvas.width - p.left),
      y1 = Math.min(info.height, canvas.height - p.top);
    const piece = await sharp(data)
      .extract({ left: x0, top: y0, width: x1 - x0, height: y1 - y0 })
      .png()
      .toBuffer();
    layers.push({ input: piece, left: p.left + x0, top: p.top + y0 });
    // Centre of the landmarks, scaled, then rotated about the portrait's centre into the expanded canvas.
    const cx = (own.centre.x + 0.5) * k - p.width / 2,
      cy = (own.centre.y + 0.5) * k - h / 2;
    const t = (angle * Math.PI) / 180;
    const rx = cx * Math.cos(t) - cy * Math.sin(t),
      ry = cx * Math.sin(t) + cy * Math.cos(t);
    faces.push({
      image: p.image,
      centre: { x: p.left + info.width / 2 + rx - 0.5, y: p.top + info.height / 2 + ry - 0.5 },
      eyes: own.eyes * k,
    });
  }
  const png = await sharp({
    create: { width: canvas.width, height: canvas.height, channels: 3, background: { r: 128, g: 128, b: 128 } },
  })
    .composite(layers)
    .png()
    .toBuffer();
  return { png, faces };
}
