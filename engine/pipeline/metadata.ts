/**
 * Carrying metadata into the encoded output. sharp keeps metadata only from a decoded input image, and our
 * output starts as raw pixels, so the input's EXIF block is spliced into the container here: JPEG APP1,
 * PNG eXIf, WebP EXIF chunk. Orientation is reset to 1 because the pixels are already upright.
 */
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

const EXIF_HEADER = Buffer.from('Exif\0\0', 'latin1');

/** The TIFF part of an EXIF block with IFD0's Orientation set to 1; undefined when the block is unusable. */
export function uprightExif(exif: Buffer): Buffer | undefined {
  const tiff = Buffer.from(exif.subarray(0, 6).equals(EXIF_HEADER) ? exif.subarray(6) : exif);
  if (tiff.length < 8) return undefined;
  const order = tiff.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return undefined;
  const le = order === 'II';
  const u16 = (o: number) => (le ? tiff.readUInt16LE(o) : tiff.readUInt16BE(o));
  const u32 = (o: number) => (le ? tiff.readUInt32LE(o) : tiff.readUInt32BE(o));
  if (u16(2) !== 42) return undefined;
  const ifd = u32(4);
  if (ifd + 2 > tiff.length) return undefined;
  const count = u16(ifd);
  for (let i = 0; i < count; i++) {
    const e = ifd + 2 + i * 12;
    if (e + 12 > tiff.length) break;
    // 0x0112 Orientation, type 3 (SHORT): the value sits in the first two bytes of the value field.
    if (u16(e) === 0x0112 && u16(e + 2) === 3) {
      if (le) tiff.writeUInt16LE(1, e + 8);
      else tiff.writeUInt16BE(1, e + 8);
    }
  }
  return tiff;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Inserts a chunk right after IHDR (before PLTE/IDAT, where iCCP and eXIf must be). */
function insertPngChunk(png: Buffer, type: string, data: Buffer): Buffer {
  const ihdrEnd = 8 + 8 + png.readUInt32BE(8) + 4;
  return Buffer.concat([png.subarray(0, ihdrEnd), pngChunk(type, data), png.subarray(ihdrEnd)]);
}

function insertJpegExif(jpeg: Buffer, tiff: Buffer): Buffer | undefined {
  const payload = Buffer.concat([EXIF_HEADER, tiff]);
  if (payload.length + 2 > 0xffff) return undefined;
  const seg = Buffer.alloc(4);
  seg.writeUInt16BE(0xffe1, 0);
  seg.writeUInt16BE(payload.length + 2, 2);
  // Right after SOI: readers expect APP1/Exif first (sharp writes no JFIF APP0 ahead of it).
  return Buffer.concat([jpeg.subarray(0, 2), seg, payload, jpeg.subarray(2)]);
}

function insertWebpExif(webp: Buffer, tiff: Buffer, width: number, height: number): Buffer {
  let out = webp;
  if (out.toString('latin1', 12, 16) !== 'VP8X') {
    // Simple (VP8/VP8L) files cannot carry metadata; wrap them in the extended format.
    const vp8x = Buffer.alloc(18);
    vp8x.write('VP8X', 0, 'latin1');
    vp8x.writeUInt32LE(10, 4);
    vp8x.writeUIntLE(width - 1, 12, 3);
    vp8x.writeUIntLE(height - 1, 15, 3);
    out = Buffer.concat([out.subarray(0, 12), vp8x, out.subarray(12)]);
  } else {
    out = Buffer.from(out);
  }
  out.writeUInt8((out.readUInt8(20) | 0x08) >>> 0, 20);
  const head = Buffer.alloc(8);
  head.write('EXIF', 0, 'latin1');
  head.writeUInt32LE(tiff.length, 4);
  const pad = tiff.length % 2 === 1 ? Buffer.alloc(1) : Buffer.alloc(0);
  out = Buffer.concat([out, head, tiff, pad]);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

export type ContainerFormat = 'jpg' | 'png' | 'webp';

/** Adds the input's EXIF to an encoded image; answers the image unchanged when it cannot. */
export function injectExif(
  encoded: Buffer,
  format: ContainerFormat,
  exif: Buffer,
  width: number,
  height: number,
): Buffer {
  const tiff = uprightExif(exif);
  if (!tiff) return encoded;
  if (format === 'jpg') return insertJpegExif(encoded, tiff) ?? encoded;
  if (format === 'png') return insertPngChunk(encoded, 'eXIf', tiff);
  return insertWebpExif(encoded, tiff, width, height);
}

let srgbProfile: Promise<Buffer> | undefined;

/** libvips' sRGB profile, as sharp attaches it to 8-bit outputs. */
function srgbIcc(): Promise<Buffer> {
  srgbProfile ??= sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
    .withIccProfile('srgb')
    .png()
    .toBuffer()
    .then(async (png) => {
      const icc = (await sharp(png).metadata()).icc;
      if (!icc) throw new Error('sharp did not attach an sRGB profile');
      return icc;
    });
  return srgbProfile;
}

/**
 * Tags a PNG as sRGB with an iCCP chunk. Used for 16-bit PNGs: sharp's withIccProfile would run a colour
 * transform that does not preserve 16-bit values, while the pixels are already sRGB.
 */
export async function tagPngSrgb(png: Buffer): Promise<Buffer> {
  const icc = await srgbIcc();
  return insertPngChunk(png, 'iCCP', Buffer.concat([Buffer.from('sRGB\0\0', 'latin1'), deflateSync(icc)]));
}
