/**
 * The face stage on real photos with faces (set5/set14 portraits, composed into group pictures at test time)
 * and face models built in the test. The "upscale" under the stage is a plain Lanczos resize here, so these
 * tests are about detection, placement and blending; test/faces/facePipeline.test.ts runs the real pipeline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alignFace, faceAffine } from '../../engine/core/faces/align.js';
import { detectFaces, eyeDistance, type DetectedFace } from '../../engine/core/faces/detect.js';
import { enhanceFaces, memoryRegions, type FaceStageOptions } from '../../engine/core/faces/faceStage.js';
import {
  FACE_SIZE,
  applyAffine,
  composeAffine,
  invertAffine,
  similarityTransform,
  type Point,
} from '../../engine/core/faces/geometry.js';
import { faceOutputRect, pasteFace, type Rect } from '../../engine/core/faces/paste.js';
import { FaceModelError } from '../../engine/core/faces/restore.js';
import { createInference, type Inference } from '../../engine/core/inference/index.js';
import type { Raster } from '../../engine/core/pipeline/index.js';
import { MODELS_DIR } from '../helpers/paths.js';
import { constantFaceModel, identityFaceModel, wrongShapeFaceModel, writeModel } from './support/faceModels.js';
import {
  FACE_PHOTOS,
  composeGroup,
  photoPath,
  type LandmarkCentre,
  type PlacedFace,
  type Placement,
} from './support/groupPhoto.js';

const DETECTOR = path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx');
const DETECTOR_640 = path.join(MODELS_DIR, 'face', 'yunet_s_640_640.onnx');

let inference: Inference;
let tmp: string;
let red: string;
let identity: string;

beforeAll(() => {
  inference = createInference({ executionProvider: 'cpu', threads: 1 });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-faces-'));
  red = writeModel(tmp, 'red.onnx', constantFaceModel([1, -1, -1]));
  identity = writeModel(tmp, 'identity.onnx', identityFaceModel());
});
afterAll(async () => {
  await inference.release();
  rmSync(tmp, { recursive: true, force: true });
});

async function rasterOf(png: Buffer | string, channels: 3 | 4 = 3): Promise<Raster> {
  let img = sharp(png);
  img = channels === 3 ? img.removeAlpha() : img.ensureAlpha();
  const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels, depth: 8 };
}

/** The stand-in upscale: Lanczos-3 to ×scale. */
async function plainUpscale(r: Raster, scale: number): Promise<Raster> {
  const { data, info } = await sharp(r.data, {
    raw: { width: r.width, height: r.height, channels: r.channels as 3 | 4 },
  })
    .resize(r.width * scale, r.height * scale, { kernel: 'lanczos3' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels: r.channels, depth: 8 };
}

function stage(restorerPath: string, extra: Partial<FaceStageOptions> = {}): FaceStageOptions {
  return {
    detectorPath: DETECTOR,
    restorerPath,
    restorerName: path.basename(restorerPath),
    detect: { scoreThreshold: 0.7 },
    ...extra,
  };
}

const landmarkCache = new Map<string, Promise<LandmarkCentre>>();
/** Each portrait's own landmark centre, measured on the portrait alone. */
function ownLandmarks(image: string): Promise<LandmarkCentre> {
  let p = landmarkCache.get(image);
  if (!p) {
    p = (async () => {
      const r = await rasterOf(photoPath(image));
      const faces = await detectFaces(r, await inference.graph(DETECTOR), { scoreThreshold: 0.7 });
      expect(faces).toHaveLength(1);
      const f = faces[0]!;
      const c = f.landmarks.reduce((a, q) => ({ x: a.x + q.x / 5, y: a.y + q.y / 5 }), { x: 0, y: 0 });
      return { centre: c, eyes: eyeDistance(f), width: r.width, height: r.height };
    })();
    landmarkCache.set(image, p);
  }
  return p;
}

function px(r: Raster, x: number, y: number): number[] {
  const i = (Math.round(y) * r.width + Math.round(x)) * r.channels;
  return Array.from(r.data.subarray(i, i + r.channels));
}

function inside(rects: Rect[], x: number, y: number): boolean {
  return rects.some((q) => x >= q.x && x < q.x + q.width && y >= q.y && y < q.y + q.height);
}

/** Every expected face: the whole disc around its centre (radius = ¾ eye distance) is exactly `colour`. */
function expectPainted(out: Raster, faces: PlacedFace[], scale: number, colour: number[]): void {
  for (const f of faces) {
    const cx = (f.centre.x + 0.5) * scale - 0.5,
      cy = (f.centre.y + 0.5) * scale - 0.5;
    const r = 0.75 * f.eyes * scale;
    let bad = 0,
      n = 0;
    for (let y = Math.ceil(cy - r); y <= cy + r; y++) {
      for (let x = Math.ceil(cx - r); x <= cx + r; x++) {
        if ((x - cx) ** 2 + (y - cy) ** 2 > r * r || x < 0 || y < 0 || x >= out.width || y >= out.height) continue;
        n++;
        if (px(out, x, y).slice(0, 3).join() !== colour.join()) bad++;
      }
    }
    expect(n, f.image).toBeGreaterThan(50);
    expect(bad, `${f.image}: ${bad} of ${n} pixels around the face centre not painted`).toBe(0);
  }
}

/** Changed pixels all lie inside the rectangles the detected faces may touch; answers how many changed. */
function changedOnlyIn(before: Raster, after: Raster, rects: Rect[]): number {
  let changed = 0,
    outside = 0;
  const ch = before.channels;
  for (let y = 0; y < before.height; y++) {
    for (let x = 0; x < before.width; x++) {
      const i = (y * before.width + x) * ch;
      let same = true;
      for (let c = 0; c < ch; c++) if (before.data[i + c] !== after.data[i + c]) same = false;
      if (same) continue;
      changed++;
      if (!inside(rects, x, y)) outside++;
    }
  }
  expect(outside).toBe(0);
  return changed;
}

function rectsFor(faces: DetectedFace[], input: Raster, scale: number, outW: number, outH: number): Rect[] {
  return faces
    .map((f) => faceOutputRect({ toFace: faceAffine(f), size: FACE_SIZE }, scale, outW, outH))
    .filter((r): r is Rect => r !== null);
}

describe('geometry', () => {
  it('the least-squares similarity recovers a known rotation, scale and shift, and inverts exactly', () => {
    const t = 0.4,
      s = 1.7;
    const truth = [s * Math.cos(t), -s * Math.sin(t), 12.5, s * Math.sin(t), s * Math.cos(t), -7] as const;
    const src: Point[] = [
      { x: 3, y: 4 },
      { x: 50, y: 8 },
      { x: 20, y: 40 },
      { x: 9, y: 70 },
      { x: 44, y: 66 },
    ];
    const m = similarityTransform(
      src,
      src.map((p) => applyAffine(truth, p)),
    );
    m.forEach((v, i) => expect(v).toBeCloseTo(truth[i]!, 9));
    const id = composeAffine(invertAffine(m), m);
    [1, 0, 0, 0, 1, 0].forEach((v, i) => expect(id[i]).toBeCloseTo(v, 9));
  });
});

describe('detection on the benchmark portraits', () => {
  it('finds exactly one usable face in each portrait and none in bird or baboon, with both YuNet files', async () => {
    for (const file of [DETECTOR, DETECTOR_640]) {
      const g = await inference.graph(file);
      const fixed = file === DETECTOR_640 ? { fixedInput: { width: 640, height: 640 } } : {};
      for (const image of FACE_PHOTOS) {
        const faces = await detectFaces(await rasterOf(photoPath(image)), g, { scoreThreshold: 0.7, ...fixed });
        expect(faces.length, `${image} with ${path.basename(file)}`).toBe(1);
        expect(eyeDistance(faces[0]!)).toBeGreaterThan(16);
      }
      for (const image of ['set5/bird', 'set14/baboon'])
        expect(await detectFaces(await rasterOf(photoPath(image)), g, { scoreThreshold: 0.7, ...fixed })).toEqual([]);
    }
  });
});

describe('detection on large images', () => {
  it('detects on a downscaled copy and maps the landmarks back to full-size pixels', async () => {
    const small = await rasterOf(photoPath('set14/lenna')); // 512×512
    const k = 3;
    const big = await plainUpscale(small, k); // 1536×1536: detected on a 640-px copy
    const g = await inference.graph(DETECTOR);
    const [a] = await detectFaces(small, g);
    const found = await detectFaces(big, g);
    expect(found).toHaveLength(1);
    const b = found[0]!;
    // The same face, k times larger: landmarks at k·(p + 0.5) − 0.5 within 15% of the eye distance. YuNet's own
    // landmarks move by up to ~10% of it between input sizes (measured on lenna at 512, 640 and 1536 px); a
    // mapping back that missed the downscale factor would be off by hundreds of percent.
    const tol = 0.15 * eyeDistance(b);
    a!.landmarks.forEach((p, i) => {
      expect(Math.abs(b.landmarks[i]!.x - (k * (p.x + 0.5) - 0.5))).toBeLessThan(tol);
      expect(Math.abs(b.landmarks[i]!.y - (k * (p.y + 0.5) - 0.5))).toBeLessThan(tol);
    });
  });
});

describe('face stage', () => {
  it('a constant-colour model paints exactly the faces of a group picture: rotated, at borders, small and large', async () => {
    const { png, faces } = await composeGroup(
      { width: 560, height: 400 },
      [
        { image: 'set5/woman', width: 120, left: 10, top: 20 },
        { image: 'set14/lenna', width: 260, angle: 30, left: 130, top: 0 },
        { image: 'set5/baby', width: 170, left: 420, top: -40 },
        { image: 'set14/foreman', width: 180, angle: -20, left: -50, top: 220 },
        { image: 'set14/comic', width: 140, left: 330, top: 230 },
      ],
      ownLandmarks,
    );
    const input = await rasterOf(png);
    const scale = 2;
    const before = await plainUpscale(input, scale);
    const out = { ...before, data: before.data.slice() };
    const report = await enhanceFaces(input, scale, memoryRegions(out), inference, stage(red));
    expect(report).toEqual({ found: 5, enhanced: 5, tooSmall: 0 });
    expectPainted(out, faces, scale, [255, 0, 0]);
    const detected = await detectFaces(input, await inference.graph(DETECTOR), { scoreThreshold: 0.7 });
    const changed = changedOnlyIn(before, out, rectsFor(detected, input, scale, out.width, out.height));
    // Five faces of 20–60 px eye distance at ×2: far more than a sliver, far less than the picture.
    expect(changed).toBeGreaterThan(5 * 60 * 60);
    expect(changed).toBeLessThan(out.width * out.height * 0.6);
  });

  it('many faces: all nine portraits in one picture are found and painted', async () => {
    const crops: Record<string, Placement['crop']> = {
      'set14/man': { left: 150, top: 30, width: 160, height: 180 },
      'set14/barbara': { left: 400, top: 50, width: 180, height: 200 },
    };
    const placements: Placement[] = FACE_PHOTOS.map((image, i) => ({
      image,
      width: 150,
      left: (i % 3) * 170 + 10,
      top: Math.floor(i / 3) * 180 + 10,
      angle: i % 2 ? 8 : 0,
      ...(crops[image] ? { crop: crops[image] } : {}),
    }));
    const { png, faces } = await composeGroup({ width: 520, height: 560 }, placements, ownLandmarks);
    const input = await rasterOf(png);
    const out = await plainUpscale(input, 1 as number);
    const report = await enhanceFaces(input, 1, memoryRegions(out), inference, stage(red, { minEyeDistance: 8 }));
    expect(report.found).toBe(9);
    expect(report.enhanced).toBe(9);
    expectPainted(out, faces, 1, [255, 0, 0]);
  });

  it('an identity model changes nothing beyond the warp there and back; alpha and the rest stay byte-identical', async () => {
    const input = await rasterOf(photoPath('set5/woman'), 4);
    // A translucent band across the picture: alpha must come out exactly as it went in.
    for (let y = 0; y < 40; y++)
      for (let x = 0; x < input.width; x++) input.data[((y + 100) * input.width + x) * 4 + 3] = 90;
    const before = { ...input, data: input.data.slice() };
    const out = { ...input, data: input.data.slice() };
    const rgb = await rasterOf(
      await sharp(input.data, { raw: { width: input.width, height: input.height, channels: 4 } })
        .png()
        .toBuffer(),
    );
    const report = await enhanceFaces(rgb, 1, memoryRegions(out), inference, stage(identity));
    expect(report.enhanced).toBe(1);
    let se = 0,
      n = 0,
      alphaDiff = 0,
      maxd = 0;
    for (let i = 0; i < out.data.length; i += 4) {
      for (let c = 0; c < 3; c++) {
        const d = out.data[i + c]! - before.data[i + c]!;
        se += d * d;
        maxd = Math.max(maxd, Math.abs(d));
        n++;
      }
      if (out.data[i + 3] !== before.data[i + 3]) alphaDiff++;
    }
    expect(alphaDiff).toBe(0);
    const psnr = 10 * Math.log10((255 * 255) / (se / n));
    // Two bilinear resamples blur a little (face crop ≈ 3× the face's size here), nothing more.
    expect(psnr).toBeGreaterThan(38);
    expect(maxd).toBeGreaterThan(0);
  });

  it('an image without faces is left untouched and reported as none found', async () => {
    const input = await rasterOf(photoPath('set5/bird'));
    const before = await plainUpscale(input, 2);
    const out = { ...before, data: before.data.slice() };
    const report = await enhanceFaces(input, 2, memoryRegions(out), inference, stage(red));
    expect(report).toEqual({ found: 0, enhanced: 0, tooSmall: 0 });
    expect(Buffer.from(out.data).equals(Buffer.from(before.data))).toBe(true);
  });

  it('faces below the eye-distance floor are counted and left alone', async () => {
    const input = await rasterOf(photoPath('set14/man'));
    const before = await plainUpscale(input, 1);
    const out = { ...before, data: before.data.slice() };
    const report = await enhanceFaces(input, 1, memoryRegions(out), inference, stage(red, { minEyeDistance: 40 }));
    expect(report).toEqual({ found: 1, enhanced: 0, tooSmall: 1 });
    expect(Buffer.from(out.data).equals(Buffer.from(before.data))).toBe(true);
  });

  it('strength blends: 0.5 lands half way between the upscale and the restored face', async () => {
    const input = await rasterOf(photoPath('set14/foreman'));
    const before = await plainUpscale(input, 2);
    const out = { ...before, data: before.data.slice() };
    await enhanceFaces(input, 2, memoryRegions(out), inference, stage(red, { strength: 0.5 }));
    const own = await ownLandmarks('set14/foreman');
    const cx = (own.centre.x + 0.5) * 2 - 0.5,
      cy = (own.centre.y + 0.5) * 2 - 0.5;
    const b = px(before, cx, cy),
      a = px(out, cx, cy);
    expect(Math.abs(a[0]! - (b[0]! + 255) / 2)).toBeLessThanOrEqual(1);
    expect(Math.abs(a[1]! - b[1]! / 2)).toBeLessThanOrEqual(1);
  });

  it('pasting region by region (as a tiled, disk-backed output does) equals pasting the whole face at once', async () => {
    const input = await rasterOf(photoPath('set14/lenna'));
    const faces = await detectFaces(input, await inference.graph(DETECTOR), { scoreThreshold: 0.7 });
    const aligned = alignFace(input, faces[0]!);
    const restored = new Float32Array(aligned.crop.length).map((_, i) => Math.sin(i * 0.001));
    const paste = { toFace: aligned.toFace, restored, size: aligned.size };
    const scale = 2;
    const up = await plainUpscale(input, scale);
    const whole = { ...up, data: up.data.slice() };
    const rect = faceOutputRect(paste, scale, up.width, up.height)!;
    const io = memoryRegions(whole);
    const region = io.read(rect) as Raster;
    pasteFace(region, rect, paste, scale, 1);
    io.write(rect, region);
    // The same paste through four quarter regions cut at odd places.
    const pieces = { ...up, data: up.data.slice() };
    const pio = memoryRegions(pieces);
    const mx = rect.x + 37,
      my = rect.y + 101;
    for (const r of [
      { x: rect.x, y: rect.y, width: mx - rect.x, height: my - rect.y },
      { x: mx, y: rect.y, width: rect.x + rect.width - mx, height: my - rect.y },
      { x: rect.x, y: my, width: mx - rect.x, height: rect.y + rect.height - my },
      { x: mx, y: my, width: rect.x + rect.width - mx, height: rect.y + rect.height - my },
    ]) {
      const reg = pio.read(r) as Raster;
      pasteFace(reg, r, paste, scale, 1);
      pio.write(r, reg);
    }
    expect(Buffer.from(pieces.data).equals(Buffer.from(whole.data))).toBe(true);
    expect(Buffer.from(whole.data).equals(Buffer.from(up.data))).toBe(false);
  });

  it('a model that is not in the face convention is refused with a sentence naming it', async () => {
    const wrong = writeModel(tmp, 'wrong.onnx', wrongShapeFaceModel());
    const input = await rasterOf(photoPath('set5/woman'));
    const out = await plainUpscale(input, 1);
    const err = await enhanceFaces(input, 1, memoryRegions(out), inference, stage(wrong)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FaceModelError);
    expect((err as Error).message).toBe(
      'The face model wrong.onnx answered [1×3×1024×1024] for a 1×3×512×512 face; a face model must return the same shape. Import a GFPGAN v1.3/v1.4 model instead.',
    );
  });
});
