/**
 * The face stage: detect on the input → per face: align (crop from the input), restore, paste into the
 * output one region at a time. The output is reached only through `OutputRegions`, so the same stage runs
 * on an in-memory raster (memoryRegions) and on a disk-backed output that reads and writes rectangles.
 *
 * Crops come from the input, as GFPGAN does: restorers are trained on degraded low-resolution faces, the
 * input is in memory on every path (the upscaled output may be on disk), and a crop from the input does
 * not depend on the tile plan — see docs/cli.md "Face enhancement" for the measurement.
 */
import type { GraphSession, Inference } from '../inference/index.js';
import { allocRaster, type Raster } from '../pipeline/raster.js';
import { alignFace } from './align.js';
import { detectFaces, eyeDistance, type DetectOptions, type DetectedFace } from './detect.js';
import { faceOutputRect, pasteFace, type Rect } from './paste.js';
import { restoreFace } from './restore.js';

export interface OutputRegions {
  width: number;
  height: number;
  read(rect: Rect): Promise<Raster> | Raster;
  write(rect: Rect, pixels: Raster): Promise<void> | void;
}

export interface FaceStageOptions {
  /** Path of the YuNet ONNX file. */
  detectorPath: string;
  /** Path of the face-convention restorer. */
  restorerPath: string;
  /** Name for messages (catalog name or custom:N). */
  restorerName: string;
  /** 0..1: share of the restored face in the blend (default 1). */
  strength?: number;
  /** Faces whose eyes are closer than this (input px) are too small to help; skipped and counted. */
  minEyeDistance?: number;
  detect?: DetectOptions;
  signal?: AbortSignal;
  /** Per-face step timings (bench). */
  onTiming?: (step: 'detect' | 'align' | 'restore' | 'paste', ms: number) => void;
}

export interface FaceReport {
  found: number;
  enhanced: number;
  tooSmall: number;
}

export const MIN_EYE_DISTANCE = 16;

export function memoryRegions(target: Raster): OutputRegions {
  const ch = target.channels;
  return {
    width: target.width,
    height: target.height,
    read(r) {
      const out = allocRaster(r.width, r.height, ch, target.depth);
      for (let y = 0; y < r.height; y++) {
        const s = ((r.y + y) * target.width + r.x) * ch;
        out.data.set(target.data.subarray(s, s + r.width * ch), y * r.width * ch);
      }
      return out;
    },
    write(r, px) {
      for (let y = 0; y < r.height; y++) {
        const s = y * r.width * ch;
        target.data.set(px.data.subarray(s, s + r.width * ch), ((r.y + y) * target.width + r.x) * ch);
      }
    },
  };
}

/** A fixed-size YuNet (…_640_640.onnx) is letterboxed; the dynamic one takes any multiple of 32. */
export function detectorShape(detectorPath: string): DetectOptions['fixedInput'] {
  const m = /_(\d+)_(\d+)\.onnx$/i.exec(detectorPath);
  return m ? { width: Number(m[2]), height: Number(m[1]) } : undefined;
}

function now(): number {
  return performance.now();
}

export async function enhanceFaces(
  input: Raster,
  scale: number,
  output: OutputRegions,
  inference: Inference,
  o: FaceStageOptions,
): Promise<FaceReport> {
  const strength = Math.min(1, Math.max(0, o.strength ?? 1));
  const time = async <T>(step: 'detect' | 'align' | 'restore' | 'paste', f: () => Promise<T> | T): Promise<T> => {
    const t = now();
    const r = await f();
    o.onTiming?.(step, now() - t);
    return r;
  };
  const detector: GraphSession = await inference.graph(o.detectorPath);
  const fixed = detectorShape(o.detectorPath);
  const faces: DetectedFace[] = await time('detect', () =>
    detectFaces(input, detector, { ...o.detect, ...(fixed ? { fixedInput: fixed } : {}) }),
  );
  const minEye = o.minEyeDistance ?? MIN_EYE_DISTANCE;
  const usable = faces.filter((f) => eyeDistance(f) >= minEye);
  const report: FaceReport = { found: faces.length, enhanced: 0, tooSmall: faces.length - usable.length };
  if (usable.length === 0 || strength === 0) return report;
  const restorer = await inference.graph(o.restorerPath);
  for (const face of usable) {
    o.signal?.throwIfAborted();
    const aligned = await time('align', () => alignFace(input, face));
    const restored = await time('restore', () => restoreFace(restorer, aligned.crop, aligned.size, o.restorerName));
    const paste = { toFace: aligned.toFace, restored, size: aligned.size };
    const rect = faceOutputRect(paste, scale, output.width, output.height);
    if (!rect) continue;
    await time('paste', async () => {
      const region = await output.read(rect);
      pasteFace(region, rect, paste, scale, strength);
      await output.write(rect, region);
    });
    report.enhanced++;
  }
  return report;
}
