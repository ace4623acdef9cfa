/**
 * A raster on disk: an uncompressed, strip-organised BigTIFF written in place, so finished tiles go
 * straight to their rows and libvips (through sharp) encodes the result while reading a few strips at a
 * time. Why TIFF and not libvips' own `.v`: libvips memory-maps a whole `.v` file when it opens it, and
 * every page it then reads counts in the process's resident memory (a 192 MP output would add 576 MB),
 * while its TIFF loader reads strip by strip. BigTIFF because a gigapixel 16-bit RGBA raster is 8 GB.
 *
 * Rows are contiguous in the file (strip i starts where strip i−1 ends), so any rectangle is one positioned
 * write per row; a read-modify-write of a rectangle (the face stage's paste) is readRect + writeRect.
 */
import { closeSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import os from 'node:os';
import { allocRaster, type BitDepth, type Raster } from './raster.js';

/** A rectangle of pixels that can be written and read back: the output of the tile loop. */
export interface OutputRaster {
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly depth: BitDepth;
  /** Copies `r` (same channels and depth) with its top-left corner at (x, y). */
  writeRect(x: number, y: number, r: Raster): void;
  readRect(x: number, y: number, width: number, height: number): Raster;
  /** The pixels themselves when the output is in memory: the tile loop stitches straight into them. */
  readonly direct?: Raster;
}

/** The in-memory output: one raster holding every pixel. */
export class MemoryRaster implements OutputRaster {
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly depth: BitDepth;
  constructor(readonly raster: Raster) {
    ({ width: this.width, height: this.height, channels: this.channels, depth: this.depth } = raster);
  }

  get direct(): Raster {
    return this.raster;
  }

  writeRect(x: number, y: number, r: Raster): void {
    checkRect(this, x, y, r.width, r.height);
    const c = this.channels;
    const rowLen = r.width * c;
    for (let row = 0; row < r.height; row++) {
      this.raster.data.set(r.data.subarray(row * rowLen, (row + 1) * rowLen), ((y + row) * this.width + x) * c);
    }
  }

  readRect(x: number, y: number, width: number, height: number): Raster {
    checkRect(this, x, y, width, height);
    const out = allocRaster(width, height, this.channels, this.depth);
    const rowLen = width * this.channels;
    for (let row = 0; row < height; row++) {
      const s = ((y + row) * this.width + x) * this.channels;
      out.data.set(this.raster.data.subarray(s, s + rowLen), row * rowLen);
    }
    return out;
  }
}

function checkRect(r: OutputRaster, x: number, y: number, w: number, h: number): void {
  if (x < 0 || y < 0 || x + w > r.width || y + h > r.height) {
    throw new RangeError(`rectangle ${w}×${h} at (${x}, ${y}) is outside the ${r.width}×${r.height} raster`);
  }
}

const TAG = {
  width: 256,
  height: 257,
  bitsPerSample: 258,
  compression: 259,
  photometric: 262,
  stripOffsets: 273,
  samplesPerPixel: 277,
  rowsPerStrip: 278,
  stripByteCounts: 279,
  planarConfig: 284,
  extraSamples: 338,
} as const;
const SHORT = 3;
const LONG = 4;
const LONG8 = 16;
/** A strip is what libtiff reads at once: a few MB keeps the encoder's input buffer small and reads efficient. */
const STRIP_BYTES = 2 * 1024 * 1024;

export class DiskRaster implements OutputRaster {
  private fd: number | undefined;
  private readonly rowBytes: number;
  private readonly dataStart: number;
  private readonly bytesPerSample: number;

  private constructor(
    readonly path: string,
    readonly width: number,
    readonly height: number,
    readonly channels: number,
    readonly depth: BitDepth,
  ) {
    if (os.endianness() !== 'LE') throw new Error('streamed output needs a little-endian machine');
    this.bytesPerSample = depth / 8;
    this.rowBytes = width * channels * this.bytesPerSample;
    const rowsPerStrip = Math.max(1, Math.floor(STRIP_BYTES / this.rowBytes));
    const strips = Math.ceil(height / rowsPerStrip);
    const entries = channels === 2 || channels === 4 ? 11 : 10;
    const ifdBytes = 8 + entries * 20 + 8;
    const offsetsAt = 16 + ifdBytes;
    const countsAt = offsetsAt + strips * 8;
    this.dataStart = Math.ceil((countsAt + strips * 8) / 4096) * 4096;

    const head = Buffer.alloc(this.dataStart);
    head.write('II', 0, 'latin1');
    head.writeUInt16LE(43, 2);
    head.writeUInt16LE(8, 4);
    head.writeBigUInt64LE(16n, 8);
    let p = 16;
    head.writeBigUInt64LE(BigInt(entries), p);
    p += 8;
    const entry = (tag: number, type: number, count: number, write: (at: number) => void) => {
      head.writeUInt16LE(tag, p);
      head.writeUInt16LE(type, p + 2);
      head.writeBigUInt64LE(BigInt(count), p + 4);
      write(p + 12);
      p += 20;
    };
    const colour = channels >= 3 ? 3 : 1;
    entry(TAG.width, LONG, 1, (at) => head.writeUInt32LE(width, at));
    entry(TAG.height, LONG, 1, (at) => head.writeUInt32LE(height, at));
    // Up to four SHORTs fit in the entry's 8-byte value field.
    entry(TAG.bitsPerSample, SHORT, channels, (at) => {
      for (let c = 0; c < channels; c++) head.writeUInt16LE(depth, at + 2 * c);
    });
    entry(TAG.compression, SHORT, 1, (at) => head.writeUInt16LE(1, at));
    entry(TAG.photometric, SHORT, 1, (at) => head.writeUInt16LE(colour === 3 ? 2 : 1, at));
    entry(TAG.stripOffsets, LONG8, strips, (at) =>
      head.writeBigUInt64LE(BigInt(strips === 1 ? this.dataStart : offsetsAt), at),
    );
    entry(TAG.samplesPerPixel, SHORT, 1, (at) => head.writeUInt16LE(channels, at));
    entry(TAG.rowsPerStrip, LONG, 1, (at) => head.writeUInt32LE(rowsPerStrip, at));
    entry(TAG.stripByteCounts, LONG8, strips, (at) =>
      head.writeBigUInt64LE(BigInt(strips === 1 ? height * this.rowBytes : countsAt), at),
    );
    entry(TAG.planarConfig, SHORT, 1, (at) => head.writeUInt16LE(1, at));
    // 2 = unassociated alpha: the samples are straight (not premultiplied), as the rest of the pipeline keeps them.
    if (entries === 11) entry(TAG.extraSamples, SHORT, 1, (at) => head.writeUInt16LE(2, at));
    head.writeBigUInt64LE(0n, p);
    for (let s = 0; s < strips; s++) {
      const rows = Math.min(rowsPerStrip, height - s * rowsPerStrip);
      if (strips > 1) {
        head.writeBigUInt64LE(BigInt(this.dataStart + s * rowsPerStrip * this.rowBytes), offsetsAt + s * 8);
        head.writeBigUInt64LE(BigInt(rows * this.rowBytes), countsAt + s * 8);
      }
    }
    this.fd = openSync(path, 'wx+', 0o600);
    writeSync(this.fd, head, 0, head.length, 0);
    // Full length at once (sparse: no blocks are taken until rows land), so a reader never meets a short file.
    ftruncateSync(this.fd, this.fileBytes);
  }

  /** Creates the file with its header; pixels not yet written read as 0. `path` must not exist. */
  static create(path: string, width: number, height: number, channels: number, depth: BitDepth): DiskRaster {
    return new DiskRaster(path, width, height, channels, depth);
  }

  /** Size of the finished file, in bytes (the file is sparse until every row is written). */
  get fileBytes(): number {
    return this.dataStart + this.height * this.rowBytes;
  }

  private get handle(): number {
    if (this.fd === undefined) throw new Error(`raster ${this.path} is closed`);
    return this.fd;
  }

  writeRect(x: number, y: number, r: Raster): void {
    checkRect(this, x, y, r.width, r.height);
    const fd = this.handle;
    const bytes = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    const len = r.width * this.channels * this.bytesPerSample;
    const colOffset = x * this.channels * this.bytesPerSample;
    if (x === 0 && r.width === this.width) {
      writeAll(fd, bytes, 0, len * r.height, this.dataStart + y * this.rowBytes);
      return;
    }
    for (let row = 0; row < r.height; row++)
      writeAll(fd, bytes, row * len, len, this.dataStart + (y + row) * this.rowBytes + colOffset);
  }

  readRect(x: number, y: number, width: number, height: number): Raster {
    checkRect(this, x, y, width, height);
    const out = allocRaster(width, height, this.channels, this.depth);
    const bytes = Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength);
    const len = width * this.channels * this.bytesPerSample;
    const colOffset = x * this.channels * this.bytesPerSample;
    for (let row = 0; row < height; row++) {
      const at = this.dataStart + (y + row) * this.rowBytes + colOffset;
      let done = 0;
      while (done < len) {
        const n = readSync(this.handle, bytes, row * len + done, len - done, at + done);
        if (n === 0) break; // past the end of a sparse file: zeros, as allocRaster left them
        done += n;
      }
    }
    return out;
  }

  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}

function writeAll(fd: number, buf: Buffer, offset: number, length: number, position: number): void {
  let done = 0;
  while (done < length) done += writeSync(fd, buf, offset + done, length - done, position + done);
}
