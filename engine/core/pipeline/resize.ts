/** Resize: a tile from the model's native scale to the requested one, with Lanczos-3 (sharp premultiplies alpha). */
import sharp from 'sharp';
import { rawInput, type Raster } from './raster.js';

export async function resizeRaster(r: Raster, width: number, height: number): Promise<Raster> {
  if (r.width === width && r.height === height) return r;
  const { input, raw } = rawInput(r);
  let img = sharp(input, { raw, limitInputPixels: false }).resize(width, height, { kernel: 'lanczos3', fit: 'fill' });
  // Without an explicit 16-bit colourspace sharp would squeeze ushort samples into 8-bit sRGB.
  if (r.depth === 16) img = img.toColourspace(r.channels >= 3 ? 'rgb16' : 'grey16');
  const { data, info } = await img.raw(r.depth === 16 ? { depth: 'ushort' } : {}).toBuffer({ resolveWithObject: true });
  const pixels =
    r.depth === 16
      ? new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return { data: pixels, width: info.width, height: info.height, channels: info.channels, depth: r.depth };
}
