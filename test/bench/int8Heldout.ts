/**
 * The held-out images int8 is judged on: Set5 ×4 LR (as shipped in ../shared/images) and all 14 Set14 photos
 * reduced ÷4 by bicubic (mod-cropped to a multiple of 4 first, so HR and 4×LR line up). None of them is in the
 * calibration set. Shared by the int8 bench, the CI test that pins the worst image, and the sensitivity lab.
 */
import path from 'node:path';
import sharp from 'sharp';
import { psnrYPlanar } from '../../engine/convert/int8/int8Build.js';
import type { RawModel } from '../../engine/core/inference/rawModel.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { readRgb, type RgbImage } from './quality.js';
import { toByte } from '../../engine/core/pipeline/stitch.js';

export const SET5 = ['baby', 'bird', 'butterfly', 'head', 'woman'];
export const SET14 = [
  'baboon',
  'barbara',
  'bridge',
  'coastguard',
  'comic',
  'face',
  'flowers',
  'foreman',
  'lenna',
  'man',
  'monarch',
  'pepper',
  'ppt3',
  'zebra',
];

export interface HeldoutPair {
  name: string;
  lr: RgbImage;
  hr: RgbImage;
}

export async function set5Pairs(names: readonly string[] = SET5): Promise<HeldoutPair[]> {
  return Promise.all(
    names.map(async (n) => ({
      name: n,
      lr: await readRgb(path.join(IMAGES_DIR, 'set5-x4', 'lr', `${n}_LRBI_x4.png`)),
      hr: await readRgb(path.join(IMAGES_DIR, 'set5-x4', 'hr', `${n}_HR_x4.png`)),
    })),
  );
}

export async function set14Pairs(names: readonly string[] = SET14): Promise<HeldoutPair[]> {
  return Promise.all(
    names.map(async (n) => {
      const file = path.join(IMAGES_DIR, 'set14', `${n}.png`);
      const meta = await sharp(file).metadata();
      const w = meta.width - (meta.width % 4);
      const h = meta.height - (meta.height % 4);
      const hrBuf = await sharp(file).removeAlpha().extract({ left: 0, top: 0, width: w, height: h }).png().toBuffer();
      const lrBuf = await sharp(hrBuf)
        .resize(w / 4, h / 4, { kernel: 'cubic' })
        .png()
        .toBuffer();
      return { name: n, lr: await readRgb(lrBuf), hr: await readRgb(hrBuf) };
    }),
  );
}

/** 8-bit RGB of a planar float output, as the app writes it. */
export function rgbOf(y: Float32Array, width: number, height: number): RgbImage {
  const plane = width * height;
  const data = new Uint8Array(plane * 3);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) data[i * 3 + c] = toByte(y[c * plane + i]!);
  return { data, width, height };
}

export function planarOf(img: RgbImage): Float32Array {
  const plane = img.width * img.height;
  const x = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) x[c * plane + i] = img.data[i * 3 + c]! / 255;
  return x;
}

/** A model's raw outputs on the pairs' LR images (planar float, [1,3,4h,4w]). */
export async function outputsOf(model: RawModel, pairs: readonly HeldoutPair[]): Promise<Float32Array[]> {
  const outs: Float32Array[] = [];
  for (const p of pairs) {
    const r = await model.run(planarOf(p.lr), [1, 3, p.lr.height, p.lr.width]);
    const first = [...r.values()][0];
    if (!first) throw new Error('the model returned no output');
    outs.push(first.data);
  }
  return outs;
}

/** PSNR-Y of each candidate output against the reference output, per image, and the worst. */
export function scoreOutputs(
  pairs: readonly HeldoutPair[],
  reference: readonly Float32Array[],
  candidate: readonly Float32Array[],
): { perImage: Array<{ name: string; psnrY: number }>; worst: number; mean: number } {
  const perImage = pairs.map((p, k) => ({
    name: p.name,
    psnrY: psnrYPlanar(reference[k]!, candidate[k]!, p.lr.height * 4, p.lr.width * 4),
  }));
  const finite = perImage.map((x) => (Number.isFinite(x.psnrY) ? x.psnrY : 99));
  return {
    perImage,
    worst: Math.min(...finite),
    mean: finite.reduce((a, b) => a + b, 0) / finite.length,
  };
}
