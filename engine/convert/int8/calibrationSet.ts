/**
 * Calibration inputs for int8 quantization: small planar RGB crops (float32 [3,size,size], 0..1).
 *
 * Photos like the user's give the best ranges, so `crisp models quantize --calibration DIR` crops the user's
 * own images. Without a folder, the bundled set is used: 48 crops of openly licensed photos and
 * illustrations (resources/calibration/crops.png, sources and licences beside it, made by
 * scripts/makeCalibrationSet.mjs). Where that file is missing (a trimmed install), a procedural set is
 * generated instead, and the quality check after quantization decides whether the result is kept.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import sharp, { type OutputInfo } from 'sharp';
import { CrispError } from '../../contract/errorCatalog.js';
import { resourcesDir } from '../../core/resourcesDir.js';

export interface CalibrationCrop {
  /** Planar float32 [3, size, size], RGB in 0..1. */
  data: Float32Array;
  size: number;
  /** Where it came from, for the manifest and messages. */
  source: string;
}

export const CALIBRATION_EXTENSIONS = ['.png', '.jpg', '.jpeg', '.webp'];

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class CalibrationError extends CrispError {
  override readonly name = 'CalibrationError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

function planar(rgb: Uint8Array, size: number): Float32Array {
  const plane = size * size;
  const out = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) out[c * plane + i] = rgb[i * 3 + c]! / 255;
  return out;
}

/**
 * Up to `count` crops of `size`² from the images in `dir` (sorted by name, not recursive), spread over
 * each image on a grid so a few large photos still give varied crops.
 */
export async function loadCalibrationCrops(
  dir: string,
  opts: { count?: number; size?: number } = {},
): Promise<CalibrationCrop[]> {
  const count = opts.count ?? 32;
  const size = opts.size ?? 64;
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => CALIBRATION_EXTENSIONS.includes(path.extname(n).toLowerCase())).sort();
  } catch {
    throw new CalibrationError(
      `Cannot read the calibration folder ${dir}. Pass a folder of JPG, PNG or WebP photos with --calibration.`,
    );
  }
  if (names.length === 0)
    throw new CalibrationError(
      `The calibration folder ${dir} has no JPG, PNG or WebP images. Add a few dozen photos like the ones you upscale.`,
    );
  const perImage = Math.max(1, Math.ceil(count / names.length));
  const crops: CalibrationCrop[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    let img: { data: Buffer; info: OutputInfo };
    try {
      img = await sharp(file).rotate().removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    } catch {
      throw new CalibrationError(
        `Cannot decode the calibration image ${file}. Remove it from the folder or replace it with a JPG, PNG or WebP file.`,
      );
    }
    const { width, height } = img.info;
    if (width < size || height < size) continue;
    const grid = Math.ceil(Math.sqrt(perImage));
    for (let k = 0; k < perImage && crops.length < count; k++) {
      const gx = k % grid;
      const gy = Math.floor(k / grid) % grid;
      const left = grid === 1 ? (width - size) >> 1 : Math.round((gx * (width - size)) / (grid - 1));
      const top = grid === 1 ? (height - size) >> 1 : Math.round((gy * (height - size)) / (grid - 1));
      const rgb = new Uint8Array(size * size * 3);
      for (let y = 0; y < size; y++)
        rgb.set(img.data.subarray(((top + y) * width + left) * 3, ((top + y) * width + left + size) * 3), y * size * 3);
      crops.push({ data: planar(rgb, size), size, source: `${name}@${left},${top}` });
    }
    if (crops.length >= count) break;
  }
  if (crops.length === 0)
    throw new CalibrationError(`The images in ${dir} are all smaller than ${size}×${size} pixels; add larger photos.`);
  return crops;
}

/** The bundled sheet of calibration crops (a grid of 64×64 tiles); CRISP_RESOURCES_DIR overrides as for models. */
export function bundledCalibrationFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(resourcesDir(env), 'calibration', 'crops.png');
}

export const BUNDLED_CROP_SIZE = 64;

/** Whether the bundled set is present (a packaged app ships it; a trimmed install may not). */
export function hasBundledCalibration(env: NodeJS.ProcessEnv = process.env): boolean {
  return existsSync(bundledCalibrationFile(env));
}

/**
 * The bundled crops, in sheet order (row by row). With `count` below the sheet's size, crops are taken evenly
 * across the sheet so photos and illustrations both stay in.
 */
export async function bundledCalibrationCrops(
  opts: { count?: number; file?: string } = {},
): Promise<CalibrationCrop[]> {
  const file = opts.file ?? bundledCalibrationFile();
  let img: { data: Buffer; info: OutputInfo };
  try {
    img = await sharp(file).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  } catch {
    throw new CalibrationError(
      `The bundled calibration set ${file} is missing or unreadable. Reinstall Crisp, or pass your own photos with --calibration DIR.`,
    );
  }
  const size = BUNDLED_CROP_SIZE;
  const cols = Math.floor(img.info.width / size);
  const rows = Math.floor(img.info.height / size);
  const all: CalibrationCrop[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const rgb = new Uint8Array(size * size * 3);
      for (let y = 0; y < size; y++) {
        const start = ((r * size + y) * img.info.width + c * size) * 3;
        rgb.set(img.data.subarray(start, start + size * 3), y * size * 3);
      }
      all.push({ data: planar(rgb, size), size, source: `bundled#${r * cols + c}` });
    }
  }
  const count = Math.min(opts.count ?? all.length, all.length);
  if (count === all.length) return all;
  return Array.from({ length: count }, (_, k) => all[Math.floor((k * all.length) / count)]!);
}

/** mulberry32: a tiny deterministic PRNG, so the synthetic set (and its quantized model) is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Procedural crops: a colour gradient, anti-aliased shapes, an oriented texture and sensor-like noise. */
export function syntheticCalibrationCrops(
  opts: { count?: number; size?: number; seed?: number } = {},
): CalibrationCrop[] {
  const count = opts.count ?? 32;
  const size = opts.size ?? 64;
  const rand = prng(opts.seed ?? 14);
  const crops: CalibrationCrop[] = [];
  for (let k = 0; k < count; k++) {
    const plane = size * size;
    const data = new Float32Array(3 * plane);
    const base = [rand(), rand(), rand()];
    const grad = [rand() - 0.5, rand() - 0.5, rand() - 0.5];
    const angle = rand() * Math.PI;
    const freq = 0.05 + rand() * 0.9; // cycles per pixel ×π: smooth ramps up to near-Nyquist stripes
    const texAmp = rand() * 0.25;
    const noise = rand() < 0.5 ? 0 : rand() * 0.04;
    const shapes = Array.from({ length: 1 + Math.floor(rand() * 5) }, () => ({
      cx: rand() * size,
      cy: rand() * size,
      r: 3 + rand() * size * 0.4,
      square: rand() < 0.5,
      colour: [rand(), rand(), rand()],
    }));
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        const i = y * size + x;
        const t = texAmp * Math.sin(freq * Math.PI * (x * Math.cos(angle) + y * Math.sin(angle)));
        for (let c = 0; c < 3; c++) {
          let v = base[c]! + (grad[c]! * (x + y)) / size + t;
          for (const s of shapes) {
            const d = s.square ? Math.max(Math.abs(x - s.cx), Math.abs(y - s.cy)) : Math.hypot(x - s.cx, y - s.cy);
            // One-pixel anti-aliased edge, like a camera's optics would give.
            const cover = Math.min(1, Math.max(0, s.r - d + 0.5));
            v = v * (1 - cover) + s.colour[c]! * cover;
          }
          if (noise > 0) v += noise * (rand() + rand() + rand() - 1.5);
          data[c * plane + i] = Math.min(1, Math.max(0, v));
        }
      }
    }
    crops.push({ data, size, source: `synthetic#${k}` });
  }
  return crops;
}
