/**
 * Faces through the real pipeline and engine: the stage runs after stitch/resize and before encode, tiling
 * does not change what it does, an image without faces comes out byte-identical to the plain upscale, and
 * the engine reports faces per file and refuses what it cannot do.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import { FaceModelMissingError, resolveFaceModel } from '../../engine/core/faces/faceModels.js';
import { enhanceFaces, memoryRegions } from '../../engine/core/faces/faceStage.js';
import { createInference, type Inference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { encodeRaster, upscaleImage, type Raster, type UpscaleJob } from '../../engine/core/pipeline/index.js';
import { FAST_MODEL, makeEngine, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { constantFaceModel, writeModel } from './support/faceModels.js';

const DETECTOR = path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx');
const WOMAN = path.join(IMAGES_DIR, 'set5-x2', 'lr', 'woman_LRBI_x2.png'); // 114×172, one face
const BIRD = path.join(IMAGES_DIR, 'set5-x4', 'lr', 'bird_LRBI_x4.png'); // 72×72, no face
const model = resolveModel(FAST_MODEL, [ONNX_DIR]);

let inference: Inference;
let tmp: string;
let modelsDir: string;
let red: string;
let n = 0;

beforeAll(() => {
  inference = createInference({ executionProvider: 'cpu' });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-face-pipeline-'));
  // A models folder laid out as installs make it: face/<detector> and face/custom-<name>.onnx.
  modelsDir = path.join(tmp, 'models');
  mkdirSync(path.join(modelsDir, 'face'), { recursive: true });
  symlinkSync(DETECTOR, path.join(modelsDir, 'face', 'yunet_s_dynamic.onnx'));
  red = writeModel(path.join(modelsDir, 'face'), 'custom-red.onnx', constantFaceModel([1, -1, -1]));
});
afterAll(async () => {
  await inference.release();
  rmSync(tmp, { recursive: true, force: true });
});

const faces = () => ({
  detectorPath: DETECTOR,
  restorerPath: red,
  restorerName: 'custom:red',
  detect: { scoreThreshold: 0.7 },
});

async function run(input: string, opts: Partial<UpscaleJob>) {
  const outputPath = path.join(tmp, `out-${n++}.png`);
  const result = await upscaleImage(
    {
      input: { path: input },
      inputName: path.basename(input),
      model,
      scale: 2,
      format: 'png',
      compression: 0,
      outputPath,
      ...opts,
    },
    inference,
  );
  return { result, file: readFileSync(outputPath) };
}

async function pixels(png: Buffer): Promise<Raster> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels: info.channels, depth: 8 };
}

describe('face stage in the pipeline', () => {
  it('an image without faces is byte-identical to the plain upscale, with one warning naming it', async () => {
    const plain = await run(BIRD, {});
    const withFaces = await run(BIRD, { faces: faces() });
    expect(withFaces.file.equals(plain.file)).toBe(true);
    expect(withFaces.result.faces).toEqual({ found: 0, enhanced: 0, tooSmall: 0 });
    expect(withFaces.result.warnings).toEqual([
      'No face was found in "bird_LRBI_x4.png": it was upscaled without face enhancement.',
    ]);
    expect(plain.result.warnings).toBeUndefined();
  });

  it('a face split across 48-px tiles gets exactly what the stage does to the plain tiled upscale in memory', async () => {
    const tiledPlain = await pixels((await run(WOMAN, { tileSize: 48 })).file);
    const tiled = await run(WOMAN, { tileSize: 48, faces: faces() });
    expect(tiled.result.faces).toEqual({ found: 1, enhanced: 1, tooSmall: 0 });
    expect(tiled.result.warnings).toBeUndefined();
    // The same stage applied by hand to the plain tiled output, in memory.
    const input = await pixels(await sharp(WOMAN).removeAlpha().png().toBuffer());
    await enhanceFaces(input, 2, memoryRegions(tiledPlain), inference, faces());
    const got = await pixels(tiled.file);
    expect(Buffer.from(got.data).equals(Buffer.from(tiledPlain.data))).toBe(true);
    // And the face really is painted: the middle of the face (between eyes and mouth) is pure red.
    const i = (Math.round(got.height * 0.35) * got.width + Math.round(got.width * 0.5)) * got.channels;
    expect(Array.from(got.data.subarray(i, i + 3))).toEqual([255, 0, 0]);
  });
});

describe('face stage on the disk-backed output', () => {
  it('streaming to disk gives the same file as the in-memory output, faces included', async () => {
    const memory = await run(WOMAN, { tileSize: 48, outputMode: 'memory', faces: faces() });
    const disk = await run(WOMAN, { tileSize: 48, outputMode: 'disk', tempDir: tmp, faces: faces() });
    expect(disk.result.budget.streamed).toBe(true);
    expect(disk.result.faces).toEqual({ found: 1, enhanced: 1, tooSmall: 0 });
    const a = await pixels(memory.file),
      b = await pixels(disk.file);
    expect(Buffer.from(b.data).equals(Buffer.from(a.data))).toBe(true);
  });
});

describe('face stage on 16-bit images', () => {
  it('a 16-bit PNG keeps 16 bits and gets the face painted at full range', async () => {
    const deep = path.join(tmp, 'woman16.png');
    await sharp(WOMAN).toColourspace('rgb16').png().toFile(deep);
    const { file, result } = await run(deep, { faces: faces() });
    expect(result.faces).toEqual({ found: 1, enhanced: 1, tooSmall: 0 });
    const { data, info } = await sharp(file)
      .toColourspace('rgb16')
      .raw({ depth: 'ushort' })
      .toBuffer({ resolveWithObject: true });
    const px = new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
    const i = (Math.round(info.height * 0.35) * info.width + Math.round(info.width * 0.5)) * info.channels;
    // Full-range red as the 16-bit encoder writes it (compared through the encoder, which is not under test here).
    const redPng = await encodeRaster(
      { data: new Uint16Array([65535, 0, 0]), width: 1, height: 1, channels: 3, depth: 16 },
      { format: 'png', compression: 0 },
    );
    const ref = await sharp(redPng.data).toColourspace('rgb16').raw({ depth: 'ushort' }).toBuffer();
    expect(Array.from(px.subarray(i, i + 3))).toEqual(Array.from(new Uint16Array(ref.buffer, ref.byteOffset, 3)));
    expect((await sharp(file).metadata()).depth).toBe('ushort');
  });
});

describe('face stage in the engine', () => {
  it('reports faces per file and warns only when none was found', async () => {
    const engine = await makeEngine({
      modelDirs: [ONNX_DIR, modelsDir],
      face: { model: 'custom:red', detect: { scoreThreshold: 0.7 } },
    });
    try {
      const fields = { model: FAST_MODEL, scale: '2', saveImageAs: 'png', enhanceFace: 'true' };
      const a = await engine.startTask(LOCAL_CALLER, {
        fields,
        file: [{ originalFileName: 'woman.png', data: { path: WOMAN } }],
      });
      const s = await waitForTask(engine, a.taskId);
      expect(s.status).toBe('PROCESSED');
      expect(s.files[0]!.faces).toEqual({ found: 1, enhanced: 1 });
      expect(s.warnings ?? []).toEqual([]);
      const b = await engine.startTask(LOCAL_CALLER, {
        fields,
        file: [{ originalFileName: 'bird.png', data: { path: BIRD } }],
      });
      const t = await waitForTask(engine, b.taskId);
      expect(t.files[0]!.faces).toEqual({ found: 0, enhanced: 0 });
      expect(t.warnings).toEqual(['No face was found in "bird.png": it was upscaled without face enhancement.']);
      // Without enhanceFace nothing is reported and no face is looked for.
      const c = await engine.startTask(LOCAL_CALLER, {
        fields: { ...fields, enhanceFace: 'false' },
        file: [{ originalFileName: 'bird.png', data: { path: BIRD } }],
      });
      const u = await waitForTask(engine, c.taskId);
      expect(u.files[0]!.faces).toBeUndefined();
    } finally {
      await engine.close();
    }
  });

  it('a missing face model is refused at start with the ways to get one', async () => {
    const empty = path.join(tmp, 'empty');
    mkdirSync(empty, { recursive: true });
    expect(() => resolveFaceModel(undefined, [empty])).toThrow(
      new FaceModelMissingError(
        'Face enhancement needs a face model and none is installed. Get one with "crisp models fetch gfpgan-1.4", or import one with "crisp models import FILE --face" (a GFPGAN v1.3/v1.4 .pth, or an ONNX face restorer: 1×3×512×512 RGB in [-1, 1]).',
      ),
    );
    await expect(makeEngine({ modelDirs: [ONNX_DIR, empty], face: { model: 'gfpgan-1.4' } })).rejects.toThrow(
      /The face model "gfpgan-1.4" is not installed\. Get one with "crisp models fetch gfpgan-1\.4", or import one with "crisp models import FILE --face"/,
    );
    expect(resolveFaceModel(undefined, [modelsDir])).toEqual({
      name: 'custom:red',
      restorerPath: red,
      detectorPath: path.join(modelsDir, 'face', 'yunet_s_dynamic.onnx'),
    });
  });
});
