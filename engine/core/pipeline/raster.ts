/** The typed hand-off between pipeline stages: interleaved 8- or 16-bit pixels, never float (memory). */
export type BitDepth = 8 | 16;
export type PixelArray = Uint8Array | Uint16Array;

export interface Raster {
  data: PixelArray;
  width: number;
  height: number;
  /** Interleaved channels: 1 (alpha plane), 3 (RGB) or 4 (RGBA). */
  channels: number;
  depth: BitDepth;
}

export function maxValue(depth: BitDepth): number {
  return depth === 16 ? 65535 : 255;
}

export function allocRaster(width: number, height: number, channels: number, depth: BitDepth): Raster {
  const n = width * height * channels;
  return { data: depth === 16 ? new Uint16Array(n) : new Uint8Array(n), width, height, channels, depth };
}

/** sharp wants a Buffer-compatible view; a Uint16Array is passed as is so sharp infers 'ushort'. */
export function rawInput(r: Raster): {
  input: Uint8Array | Uint16Array;
  raw: { width: number; height: number; channels: 1 | 2 | 3 | 4 };
} {
  const channels = r.channels as 1 | 2 | 3 | 4;
  return { input: r.data, raw: { width: r.width, height: r.height, channels } };
}
