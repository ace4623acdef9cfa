/**
 * What a job will need, estimated from the header before any pixel is decoded, and the refusal when the disk
 * cannot hold it. The formulas are docs/limits.md's "Memory and disk" table:
 *
 *   B = bytes per sample (2 for a 16-bit PNG, else 1), C = output channels (3, or 4 with alpha)
 *   output raster  R = W·H·C·B                       (W×H the requested output)
 *   decoded input  I = w·h·(3 + alpha)·B             (w×h the input)
 *   in memory:  RAM ≈ base + tile + I + 2·R          (the raster, plus sharp's copy while it encodes)
 *   streamed:   RAM ≈ base + tile + band + encoder   (independent of W·H, except WebP: libwebp holds 4·W·H)
 *               temp disk = R + I beside the output, removed when the job ends
 *   output file ≤ R (PNG, lossless worst case), ≤ R/2 (JPEG, WebP)
 *
 * base (Node, onnxruntime, sharp) and the per-tile-pixel cost were measured with `npm run bench -- --only huge`.
 */
import { statfs, stat } from 'node:fs/promises';
import type { SaveImageAs } from '../../contract/index.js';
import { ImageInputError } from './errors.js';
import { DEFAULT_OVERLAP } from './tiles.js';

const MiB = 1024 * 1024;
/** Node + onnxruntime + sharp with a model session loaded, before any image. */
const BASE_BYTES = 150 * MiB;
/**
 * Model activations, convolution workspace and the float output per padded tile pixel (64-channel feature
 * maps, ×4 float output): fitted to the bench's peaks (428 MB with 416² tiles, 793 MB with 532² tiles).
 */
const TILE_BYTES_PER_PIXEL = 2200;

export type OutputMode = 'auto' | 'memory' | 'disk';

export interface JobShape {
  inWidth: number;
  inHeight: number;
  /** Whether the input has an alpha channel (translucency is only known after decoding: an upper bound). */
  hasAlpha: boolean;
  /** 16 when the output keeps 16-bit samples (PNG from a 16-bit input). */
  outDepth: 8 | 16;
  outWidth: number;
  outHeight: number;
  format: SaveImageAs;
  /** Tile side in input pixels. */
  tileSize: number;
}

export interface JobBudget {
  /** True when tiles stream to a disk raster instead of an in-memory one. */
  streamed: boolean;
  /** Estimated peak resident memory, bytes. */
  memoryBytes: number;
  /** Temporary files beside the output (streamed jobs only), bytes. */
  tempDiskBytes: number;
  /** The encoded output (an upper bound), bytes. */
  outputBytes: number;
}

/** `streamAboveBytes`: in 'auto' mode, outputs whose raster is larger than this stream to disk. */
export function estimateJob(job: JobShape, mode: OutputMode, streamAboveBytes: number): JobBudget {
  const b = job.outDepth / 8;
  const c = job.hasAlpha ? 4 : 3;
  const raster = job.outWidth * job.outHeight * c * b;
  const input = job.inWidth * job.inHeight * c * b;
  const streamed = mode === 'disk' || (mode === 'auto' && raster > streamAboveBytes);
  // The padded tile as planTiles cuts it: the image split evenly, plus the overlap on both sides (clipped).
  const side = (len: number) => Math.min(len, Math.ceil(len / Math.ceil(len / job.tileSize)) + 2 * DEFAULT_OVERLAP);
  const tileW = side(job.inWidth);
  const tileH = side(job.inHeight);
  const tileSide = Math.max(tileW, tileH);
  const tile = tileW * tileH * TILE_BYTES_PER_PIXEL;
  const outputBytes = job.format === 'png' ? raster : Math.ceil(raster / 2);
  if (!streamed)
    return { streamed, memoryBytes: BASE_BYTES + tile + 2 * input + 2 * raster, tempDiskBytes: 0, outputBytes };
  // One input band (read rows + the split RGB/alpha copy), and the encoder's strips and row buffers.
  const band = 2 * job.inWidth * tileSide * c * b;
  const encoder = job.format === 'webp' ? job.outWidth * job.outHeight * 4 : 64 * job.outWidth * c * b + 8 * MiB;
  return { streamed, memoryBytes: BASE_BYTES + tile + band + encoder, tempDiskBytes: raster + input, outputBytes };
}

export type FreeDiskReader = (dir: string) => Promise<number>;

/** Bytes available to this user in the file system holding `dir`. */
export const freeDiskBytes: FreeDiskReader = async (dir) => {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
};

function gb(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.max(1, Math.round(bytes / 1e6))} MB`;
}

export interface DiskCheck {
  /** The file's name for the message. */
  name: string;
  budget: JobBudget;
  outputDir: string;
  tempDir: string;
  /** Kept free on top of the job's needs, so the disk is never filled to the last byte. */
  reserveBytes: number;
  freeDisk?: FreeDiskReader;
}

/**
 * Refuses, before any decoding, a job whose temp raster and output do not fit the free space of their
 * folders (added up when both live on the same file system).
 */
export async function checkDiskBudget(o: DiskCheck): Promise<void> {
  const read = o.freeDisk ?? freeDiskBytes;
  const [outDev, tempDev] = await Promise.all([
    stat(o.outputDir).then((s) => s.dev),
    stat(o.tempDir).then((s) => s.dev),
  ]);
  const needs: Array<{ dir: string; bytes: number }> =
    outDev === tempDev
      ? [{ dir: o.outputDir, bytes: o.budget.outputBytes + o.budget.tempDiskBytes }]
      : [
          { dir: o.outputDir, bytes: o.budget.outputBytes },
          { dir: o.tempDir, bytes: o.budget.tempDiskBytes },
        ];
  for (const need of needs) {
    if (need.bytes === 0) continue;
    const free = await read(need.dir);
    if (free - o.reserveBytes < need.bytes) {
      const what = o.budget.streamed ? 'its temporary raster and output need' : 'its output needs';
      throw new ImageInputError(
        o.name,
        `Not enough free disk space to upscale "${o.name}": ${what} about ${gb(need.bytes)} in ${need.dir}, ` +
          `but only ${gb(Math.max(0, free))} is free${o.reserveBytes > 0 ? ` (${gb(o.reserveBytes)} is kept in reserve)` : ''}. ` +
          'Free some space, choose a smaller scale or JPEG, or write the output to another disk.',
        'not-enough-space',
      );
    }
  }
}
