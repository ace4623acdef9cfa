/**
 * Encode: raster → JPEG / PNG / WebP bytes, tagged sRGB, with the input's EXIF carried over.
 *
 * compression (0–100, 0 = best quality):
 *   jpg, webp: quality = 100 − compression (at least 1); JPEG keeps full-resolution chroma (4:4:4) at
 *              quality ≥ 90, where 4:2:0 subsampling would be the largest visible loss.
 *   png:       always lossless; zlib level = 1 + round(compression · 8 / 100), so 0 → 1 (fastest, largest)
 *              and 100 → 9 (slowest, smallest).
 * Only PNG keeps 16-bit samples; JPEG and WebP are 8-bit formats.
 *
 * An exact output size (`resize`, geometry.ts) is one Lanczos-3 resample of the stitched raster, done by the
 * encoder's own sharp pipeline, so the in-memory and the streamed path resample the same pixels alike.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import sharp, { type Sharp } from 'sharp';
import type { SaveImageAs } from '../../contract/index.js';
import path from 'node:path';
import type { DiskRaster } from './diskRaster.js';
import { injectExif, insertJpegIptc, tagPngSrgb, type CarriedMetadata } from './metadata.js';
import { allocRaster, rawInput, type BitDepth, type Raster } from './raster.js';
import { removeTemp, tempRasterPath } from './tempFiles.js';

export interface EncodeOptions {
  format: SaveImageAs;
  compression: number;
  exif?: Buffer;
  /**
   * The metadata policy's result (metadata.ts carriedMetadata); when present it replaces `exif`: EXIF, the
   * input's ICC profile (converted into, via `iccPath`), XMP with the provenance record and IPTC. Absent: the
   * input's EXIF (`exif`) and an sRGB tag, as before policies existed.
   */
  carry?: CarriedMetadata & { iccPath?: string };
  /** The exact size to write: the raster is resampled once (Lanczos-3) to it. Absent: the raster's own size. */
  resize?: { width: number; height: number };
}

export interface EncodedImage {
  data: Buffer;
  width: number;
  height: number;
  warnings: string[];
}

export function jpegQuality(compression: number): number {
  return Math.min(100, Math.max(1, Math.round(100 - compression)));
}

export function pngLevel(compression: number): number {
  return 1 + Math.round((Math.min(100, Math.max(0, compression)) * 8) / 100);
}

function to8bit(r: Raster): Raster {
  if (r.depth === 8) return r;
  const out = allocRaster(r.width, r.height, r.channels, 8);
  // 65535 / 255 = 257 exactly: v / 257 maps the 16-bit range onto the 8-bit one.
  for (let i = 0; i < r.data.length; i++) out.data[i] = Math.round((r.data[i] ?? 0) / 257);
  return out;
}

/**
 * The sharp operations of an encode, shared by the in-memory and the streamed path so both produce the same
 * pixels. `streamed`: the input is a disk raster read strip by strip; JPEG then skips Huffman optimisation,
 * which needs every coefficient of the image in memory at once (1.2 GB for 192 MP), for files ~10 % larger.
 */
function encoder(
  input: Sharp,
  channels: number,
  depth: BitDepth,
  opts: EncodeOptions,
  streamed: boolean,
): { img: Sharp; warnings: string[] } {
  const warnings: string[] = [];
  let img = input;
  // sharp premultiplies alpha for the resample; 16-bit samples stay 16-bit (the colourspace below).
  if (opts.resize) img = img.resize(opts.resize.width, opts.resize.height, { kernel: 'lanczos3', fit: 'fill' });
  const icc = iccTarget(opts);
  const xmp = opts.format === 'jpg' ? opts.carry?.xmp : opts.carry?.xmpWithIptc;
  if (xmp) img = img.withXmp(xmp);
  if (opts.format === 'png') {
    const level = pngLevel(opts.compression);
    // 16-bit: withIccProfile would run a colour transform that does not keep 16-bit values; tagged afterwards.
    if (depth === 16) img = img.toColourspace(channels >= 3 ? 'rgb16' : 'grey16');
    else if (icc) img = img.withIccProfile(icc);
    return { img: img.png({ compressionLevel: level }), warnings };
  }
  if (opts.format === 'jpg') {
    if (channels === 4) {
      img = img.flatten({ background: '#ffffff' });
      warnings.push(
        'JPEG cannot store transparency: transparent areas were filled with white. Choose PNG or WebP to keep them.',
      );
    }
    const quality = jpegQuality(opts.compression);
    if (icc) img = img.withIccProfile(icc);
    return {
      img: img.jpeg({
        quality,
        chromaSubsampling: quality >= 90 ? '4:4:4' : '4:2:0',
        ...(streamed ? { optimiseCoding: false } : {}),
      }),
      warnings,
    };
  }
  if (icc) img = img.withIccProfile(icc);
  return { img: img.webp({ quality: jpegQuality(opts.compression), alphaQuality: 100 }), warnings };
}

/** The profile the pixels are converted into and tagged with: the input's (kept), none (stripped) or sRGB. */
function iccTarget(opts: EncodeOptions): string | undefined {
  if (!opts.carry) return 'srgb';
  if (opts.carry.stripped) return undefined;
  return opts.carry.iccPath ?? 'srgb';
}

/** The EXIF block the output gets, if any. */
const exifOf = (opts: EncodeOptions) => (opts.carry ? opts.carry.exif : opts.exif);

/** What follows the encoder: the sRGB tag of a 16-bit PNG, then the input's EXIF. Works on a whole file or its head. */
async function finishContainer(
  head: Buffer,
  opts: EncodeOptions,
  depth: BitDepth,
  width: number,
  height: number,
): Promise<Buffer> {
  let out = head;
  if (opts.format === 'png' && depth === 16 && !opts.carry?.stripped) out = await tagPngSrgb(out);
  if (opts.format === 'jpg' && opts.carry?.iptc) out = insertJpegIptc(out, opts.carry.iptc);
  const exif = exifOf(opts);
  if (exif) out = injectExif(out, opts.format, exif, width, height);
  return out;
}

export async function encodeRaster(raster: Raster, opts: EncodeOptions): Promise<EncodedImage> {
  const r = opts.format === 'png' ? raster : to8bit(raster);
  const { input, raw } = rawInput(r);
  const { img, warnings } = encoder(sharp(input, { raw, limitInputPixels: false }), r.channels, r.depth, opts, false);
  const { width, height } = opts.resize ?? r;
  const data = await finishContainer(await img.toBuffer(), opts, r.depth, width, height);
  return { data, width, height, warnings };
}

export interface EncodedFile {
  width: number;
  height: number;
  bytes: number;
  warnings: string[];
}

/**
 * Encodes an in-memory raster straight into `outputPath`, atomically, as encodeDiskRaster does: the encoded
 * image is never held in memory (a 16 MP PNG is ~30 MB, more with its EXIF copy), which matters once the next
 * image's inference runs beside this encode (issue 37).
 */
export async function encodeRasterToFile(
  raster: Raster,
  opts: EncodeOptions,
  outputPath: string,
  signal?: AbortSignal,
): Promise<EncodedFile> {
  const r = opts.format === 'png' ? raster : to8bit(raster);
  const { input, raw } = rawInput(r);
  const { img, warnings } = encoder(sharp(input, { raw, limitInputPixels: false }), r.channels, r.depth, opts, false);
  const { width, height } = opts.resize ?? r;
  return writeEncoded(img, opts, r.depth, width, height, outputPath, signal, warnings);
}

/**
 * Encodes a finished disk raster straight into `outputPath`, atomically: sharp writes a temp file beside it,
 * and the container's head (where the sRGB tag and EXIF go: right after PNG's IHDR, JPEG's SOI) is rewritten
 * while the rest is streamed across, so the encoded image is never in memory either.
 */
export async function encodeDiskRaster(
  raster: DiskRaster,
  opts: EncodeOptions,
  outputPath: string,
  signal?: AbortSignal,
): Promise<EncodedFile> {
  const { img, warnings } = encoder(
    sharp(raster.path, { limitInputPixels: false, sequentialRead: true }),
    raster.channels,
    raster.depth,
    opts,
    true,
  );
  const { width, height } = opts.resize ?? raster;
  return writeEncoded(img, opts, raster.depth, width, height, outputPath, signal, warnings);
}

/** sharp's encode into a temp file, the container's head finished, flushed to disk, then renamed into place. */
async function writeEncoded(
  img: Sharp,
  opts: EncodeOptions,
  depth: BitDepth,
  width: number,
  height: number,
  outputPath: string,
  signal: AbortSignal | undefined,
  warnings: string[],
): Promise<EncodedFile> {
  // Named after this process (tempFiles.ts): a killed engine's leftovers are swept by the next job in the folder.
  const encoded = tempRasterPath(path.dirname(outputPath), '.tmp');
  const final = tempRasterPath(path.dirname(outputPath), '.tmp');
  try {
    await img.toFile(encoded);
    signal?.throwIfAborted();
    const needsHead =
      exifOf(opts) !== undefined ||
      (opts.format === 'jpg' && opts.carry?.iptc !== undefined) ||
      (opts.format === 'png' && depth === 16 && !opts.carry?.stripped);
    let done = encoded;
    if (!needsHead) {
      // as it is
    } else if (opts.format === 'webp') {
      // WebP's EXIF goes at the end and its RIFF size changes; WebP outputs are at most 16383² and libwebp
      // already held the whole picture, so the file is read whole.
      await writeFile(final, await finishContainer(await readFile(encoded), opts, depth, width, height));
      done = final;
    } else {
      // PNG: signature (8) + IHDR (25); JPEG: SOI (2). Chunks and segments are inserted right after these.
      const headLen = opts.format === 'png' ? 33 : 2;
      const fh = await open(encoded, 'r');
      const head = Buffer.alloc(headLen);
      try {
        await fh.read(head, 0, headLen, 0);
      } finally {
        await fh.close();
      }
      const newHead = await finishContainer(head, opts, depth, width, height);
      await pipeline(
        async function* () {
          yield newHead;
          yield* createReadStream(encoded, { start: headLen });
        },
        createWriteStream(final, { flags: 'wx', mode: 0o644 }),
      );
      done = final;
    }
    // On disk before it has the output's name, as writeFileAtomic does: a crash never leaves a cut file there.
    const fh = await open(done, 'r+');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    signal?.throwIfAborted();
    await rename(done, outputPath);
    return { width, height, bytes: (await stat(outputPath)).size, warnings };
  } finally {
    await removeTemp(encoded);
    await removeTemp(final);
  }
}
