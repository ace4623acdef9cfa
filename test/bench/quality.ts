/**
 * Shared by the bench and the pipeline tests: PSNR on Y (MATLAB rgb2ycbcr / BT.601 convention) and the
 * reference path, a bare onnxruntime session run on the whole image with no tiles.
 */
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';

export interface RgbImage {
  data: Uint8Array;
  width: number;
  height: number;
}

/** 8-bit RGB (alpha dropped) of any image file or buffer. */
export async function readRgb(input: string | Uint8Array): Promise<RgbImage> {
  const { data, info } = await sharp(input)
    .removeAlpha()
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
  };
}

/** Y = 16 + (65.481 R + 128.553 G + 24.966 B) with R, G, B in 0..1 (MATLAB rgb2ycbcr), border crop, peak 255. */
export function psnrY(a: RgbImage, b: RgbImage, border = 4): number {
  if (a.width !== b.width || a.height !== b.height)
    throw new Error(`size mismatch ${a.width}×${a.height} vs ${b.width}×${b.height}`);
  let se = 0;
  let n = 0;
  for (let y = border; y < a.height - border; y++) {
    for (let x = border; x < a.width - border; x++) {
      const i = (y * a.width + x) * 3;
      const ya =
        16 + (65.481 * (a.data[i] ?? 0) + 128.553 * (a.data[i + 1] ?? 0) + 24.966 * (a.data[i + 2] ?? 0)) / 255;
      const yb =
        16 + (65.481 * (b.data[i] ?? 0) + 128.553 * (b.data[i + 1] ?? 0) + 24.966 * (b.data[i + 2] ?? 0)) / 255;
      se += (ya - yb) ** 2;
      n++;
    }
  }
  return 10 * Math.log10((255 * 255) / (se / n));
}

const sessions = new Map<string, Promise<ort.InferenceSession>>();

export function bareSession(modelPath: string): Promise<ort.InferenceSession> {
  let s = sessions.get(modelPath);
  if (!s) {
    s = ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'], graphOptimizationLevel: 'all' });
    sessions.set(modelPath, s);
  }
  return s;
}

/** Whole image through the model in one call; output clamped and rounded to 8 bits. */
export async function bareUpscale(modelPath: string, img: RgbImage): Promise<RgbImage> {
  const s = await bareSession(modelPath);
  const { width: w, height: h } = img;
  const plane = w * h;
  const x = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) x[c * plane + i] = (img.data[i * 3 + c] ?? 0) / 255;
  const out = await s.run({ [s.inputNames[0] ?? 'input']: new ort.Tensor('float32', x, [1, 3, h, w]) });
  const t = out[s.outputNames[0] ?? 'output'];
  if (!t) throw new Error('no output');
  const [, , oh = 0, ow = 0] = t.dims;
  const y = t.data as Float32Array;
  const op = oh * ow;
  const data = new Uint8Array(op * 3);
  for (let i = 0; i < op; i++) {
    for (let c = 0; c < 3; c++) {
      const v = (y[c * op + i] ?? 0) * 255;
      data[i * 3 + c] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
    }
  }
  return { data, width: ow, height: oh };
}

export async function releaseBareSessions(): Promise<void> {
  const all = [...sessions.values()];
  sessions.clear();
  await Promise.all(all.map(async (s) => (await s).release()));
}
