/**
 * The decoded input as the tile loop reads it: one band of rows at a time (a tile row plus its overlap).
 * In memory the band is a view of the decoded image; for a large input the image is decoded once into a
 * libvips `.v` file beside the output and each band is read back with positioned reads, so only the band is
 * ever in memory (the file is read with pread, never memory-mapped into this process).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { decodeFailure, openInput, splitChannels, uprightSrgb, type DecodedImage } from './decode.js';
import type { ImageInfo, ImageLimits, ImageSource } from './probe.js';
import { maxValue, type BitDepth, type PixelArray, type Raster } from './raster.js';

export interface InputBand {
  /** Interleaved RGB, rows [y, y + rows) of the image. */
  rgb: Raster;
  /** Alpha plane of the same rows, when the image is translucent anywhere. */
  alpha?: Raster;
}

export interface InputRaster {
  readonly width: number;
  readonly height: number;
  readonly depth: BitDepth;
  /** True when some pixel is not fully opaque: alpha then goes through the model too. */
  readonly hasAlpha: boolean;
  readonly exif?: Buffer;
  band(y: number, rows: number): InputBand;
  close(): void;
}

function rowsOf(r: Raster, y: number, rows: number): Raster {
  const len = r.width * r.channels;
  return { ...r, height: rows, data: r.data.subarray(y * len, (y + rows) * len) };
}

export function memoryInput(d: DecodedImage): InputRaster {
  return {
    width: d.rgb.width,
    height: d.rgb.height,
    depth: d.rgb.depth,
    hasAlpha: d.alpha !== undefined,
    ...(d.exif ? { exif: d.exif } : {}),
    band: (y, rows) => ({ rgb: rowsOf(d.rgb, y, rows), ...(d.alpha ? { alpha: rowsOf(d.alpha, y, rows) } : {}) }),
    close: () => undefined,
  };
}

const VIPS_HEADER = 64;
const VIPS_MAGIC_INTEL = 0xb6a6f208;
/** Rows scanned at a time when looking for a translucent pixel. */
const SCAN_BYTES = 8 * 1024 * 1024;

/** Decodes `input` into the `.v` file `file` (same decode as decodeImage) and opens it for band reads. */
export async function decodeToDisk(
  input: ImageSource,
  name: string,
  info: ImageInfo,
  limits: Pick<ImageLimits, 'maxInputPixels'>,
  file: string,
): Promise<InputRaster> {
  const sixteen = info.depth === 16;
  let exif: Buffer | undefined;
  try {
    const img = openInput(input, limits);
    exif = (await img.metadata()).exif;
    await uprightSrgb(img, sixteen).toFile(file);
  } catch (e) {
    throw await decodeFailure(e, input, name, info.format);
  }
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(VIPS_HEADER);
    readSync(fd, head, 0, VIPS_HEADER, 0);
    if (head.readUInt32BE(0) !== VIPS_MAGIC_INTEL) throw new Error('unexpected .v byte order');
    const width = head.readInt32LE(4);
    const height = head.readInt32LE(8);
    const channels = head.readInt32LE(12);
    const depth: BitDepth = sixteen ? 16 : 8;
    const bytes = depth / 8;
    const rowBytes = width * channels * bytes;
    const readRows = (y: number, rows: number): PixelArray => {
      const buf = Buffer.alloc(rows * rowBytes);
      let done = 0;
      while (done < buf.length) {
        const n = readSync(fd, buf, done, buf.length - done, VIPS_HEADER + y * rowBytes + done);
        if (n === 0) throw new Error(`the decoded copy of "${name}" ended early`);
        done += n;
      }
      return sixteen
        ? new Uint16Array(buf.buffer, buf.byteOffset, buf.length / 2)
        : new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
    };
    let hasAlpha = false;
    if (channels === 2 || channels === 4) {
      const opaque = maxValue(depth);
      const step = Math.max(1, Math.floor(SCAN_BYTES / rowBytes));
      for (let y = 0; y < height && !hasAlpha; y += step) {
        const src = readRows(y, Math.min(step, height - y));
        for (let i = channels - 1; i < src.length; i += channels) {
          if (src[i] !== opaque) {
            hasAlpha = true;
            break;
          }
        }
      }
    }
    let open = true;
    return {
      width,
      height,
      depth,
      hasAlpha,
      ...(exif ? { exif } : {}),
      band(y, rows) {
        const { rgb, alpha } = splitChannels(readRows(y, rows), width, rows, channels, depth);
        return { rgb, ...(hasAlpha && alpha ? { alpha } : {}) };
      },
      close() {
        if (open) closeSync(fd);
        open = false;
      },
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}
