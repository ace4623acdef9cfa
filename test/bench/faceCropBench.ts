/**
 * Crop the face from the input or from the upscaled image? (`npm run bench -- --only faces-crop`)
 * On the set5 ×4 pairs with faces (baby, head, woman): landmarks from the ground-truth HR image, then the
 * 512×512 aligned crop the restorer would see, taken from the LR input and from each model's ×4 output,
 * compared with the same crop of the HR image (PSNR over the central 384×384, RGB, range [−1, 1] as 2).
 * Deterministic (no timing), so the figures are exact on any machine.
 */
import path from 'node:path';
import { alignFace } from '../../engine/core/faces/align.js';
import { detectFaces } from '../../engine/core/faces/detect.js';
import { createInference } from '../../engine/core/inference/index.js';
import type { Raster } from '../../engine/core/pipeline/index.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { bareUpscale, readRgb, releaseBareSessions, type RgbImage } from './quality.js';

const raster = (r: RgbImage): Raster => ({ data: r.data, width: r.width, height: r.height, channels: 3, depth: 8 });

function cropPsnr(a: Float32Array, b: Float32Array): number {
  const S = 512,
    P = S * S;
  let se = 0,
    n = 0;
  for (let c = 0; c < 3; c++)
    for (let y = 64; y < 448; y++)
      for (let x = 64; x < 448; x++) {
        const i = c * P + y * S + x;
        se += (a[i]! - b[i]!) ** 2;
        n++;
      }
  return 10 * Math.log10(4 / (se / n));
}

export async function faceCropBench(): Promise<void> {
  const inference = createInference({ executionProvider: 'cpu' });
  const det = await inference.graph(path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx'));
  console.log('\n## faces-crop (PSNR of the aligned 512 crop vs the HR crop; higher = closer to the real face)');
  for (const model of ['realesr-general-x4v3', '4xLSDIRCompactC3']) {
    for (const name of ['baby', 'head', 'woman']) {
      const lr = await readRgb(path.join(IMAGES_DIR, 'set5-x4', 'lr', `${name}_LRBI_x4.png`));
      const hr = await readRgb(path.join(IMAGES_DIR, 'set5-x4', 'hr', `${name}_HR_x4.png`));
      const sr = await bareUpscale(path.join(ONNX_DIR, `${model}.onnx`), lr);
      const f = (await detectFaces(raster(hr), det))[0]!;
      const ref = alignFace(raster(hr), f).crop;
      const lrFace = { ...f, landmarks: f.landmarks.map((p) => ({ x: (p.x - 1.5) / 4, y: (p.y - 1.5) / 4 })) };
      const fromInput = cropPsnr(alignFace(raster(lr), lrFace).crop, ref);
      const fromUpscaled = cropPsnr(alignFace(raster(sr), f).crop, ref);
      console.log(
        `${model.padEnd(22)} ${name.padEnd(6)} from input ${fromInput.toFixed(2)} dB   from upscaled ${fromUpscaled.toFixed(2)} dB`,
      );
    }
  }
  await inference.release();
  await releaseBareSessions();
}
