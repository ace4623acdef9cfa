/**
 * upscaleImage: probe → budget → decode → tile plan → infer (+ per-tile resize, stitch) → encode → atomic write.
 * Every refusal that is about the user's image or the machine's disk is an ImageInputError raised before
 * heavy work starts.
 *
 * Two output paths with the same pixels: small outputs are stitched into one in-memory raster; outputs whose
 * raster exceeds `limits.streamAboveBytes` stream each finished tile into a disk raster beside the output
 * (diskRaster.ts) and the input is decoded to a file read one band at a time (inputRaster.ts), so memory is
 * a property of the tile, not of the image. Temp files are removed however the job ends (tempFiles.ts).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { SaveImageAs, Scale, SizeRequest } from '../../contract/index.js';
import type { ExecutionProvider, Inference, Precision } from '../inference/index.js';
import type { ResolvedModel } from '../models/catalog.js';
import { encodePoint, holdPoint } from '../testGate.js';
import { enhanceFaces, type FaceReport, type FaceStageOptions, type OutputRegions } from '../faces/faceStage.js';
import { checkDiskBudget, estimateJob, type FreeDiskReader, type JobBudget, type OutputMode } from './budget.js';
import { decodeImage } from './decode.js';
import { ImageInputError } from './errors.js';
import { DiskRaster, MemoryRaster, type OutputRaster } from './diskRaster.js';
import { encodeDiskRaster, encodeRasterToFile, type EncodeOptions } from './encode.js';
import { carriedMetadata, iccProfileFile, type MetadataRequest } from './metadata.js';
import { inferTiles } from './infer.js';
import type { TileTurn } from '../tileTurns.js';
import { decodeToDisk, memoryInput, type InputRaster } from './inputRaster.js';
import { DEFAULT_LIMITS, planOutput, probeImage, type ImageLimits, type ImageSource } from './probe.js';
import { JobProgress, type ProgressListener } from './progress.js';
import { recordRate, sessionRate } from './runRate.js';
import { StageClock, type StageTimes } from './stageTimes.js';
import { allocRaster } from './raster.js';
import { removeTemp, sweepStaleTemps, tempRasterPath } from './tempFiles.js';
import { chooseTileSize, DEFAULT_OVERLAP, planTiles } from './tiles.js';

/**
 * Faces are detected on the whole input held in memory (faceStage.ts), so face enhancement keeps the input
 * bound the engine had before inputs were streamed: 40 MP is 120 MB of 8-bit RGB.
 */
export const FACE_MAX_INPUT_PIXELS = 40_000_000;

export interface UpscaleJob {
  input: ImageSource;
  /** The user's name for the input, used in error messages. */
  inputName: string;
  model: ResolvedModel;
  scale: Scale;
  /**
   * An exact output size instead of `scale` (geometry.ts): the model runs at its native scale when that reaches
   * the size (else at the smallest integer scale that does), and the encode resamples once to the exact size.
   */
  size?: SizeRequest;
  format: SaveImageAs;
  /** 0–100, 0 = best quality (see encode.ts for the mapping). */
  compression: number;
  outputPath: string;
  /** Tile side in input pixels; default chosen from the image size and the execution provider. */
  tileSize?: number;
  signal?: AbortSignal;
  /**
   * Monotonic fractions 0..1, time-weighted across tiles and encode, 1 once the file is in place; etaSeconds
   * (whole seconds left) once the first tile has been measured.
   */
  onProgress?: ProgressListener;
  /** Defaults: DEFAULT_LIMITS. */
  limits?: Partial<ImageLimits>;
  /** 'auto' (default): stream to disk when the output raster exceeds limits.streamAboveBytes. */
  outputMode?: OutputMode;
  /** Folder of the temporary rasters of a streamed job; default: the output's folder (same file system). */
  tempDir?: string;
  /** Reads the free space of a folder (tests inject it); default statfs. */
  freeDisk?: FreeDiskReader;
  /**
   * Runs once every tile is in the output and before it is encoded, with read/write access to any
   * rectangle of it (readRect → modify → writeRect); the face stage pastes restored faces here. Coordinates
   * are output pixels. Memory stays bounded when it reads and writes rectangles, not the whole image.
   */
  afterStitch?: (output: OutputRaster) => Promise<void>;
  /** Face enhancement after stitch/resize and before encode, through the output's rectangles (absent: none). */
  faces?: Omit<FaceStageOptions, 'signal'>;
  /** The metadata policy and provenance record (metadata.ts); absent: the input's EXIF and an sRGB tag. */
  metadata?: MetadataRequest;
  /** Where each tile's model run waits for its turn (engine/core/tileTurns.ts); absent: runs back to back. */
  turn?: TileTurn;
  /**
   * Called once the job no longer needs the model (every tile run, faces restored), as its encode starts: the
   * pool may then start the next image's inference while this one encodes (workerPool.ts).
   */
  onEncode?: () => void;
}

export interface UpscaleResult {
  width: number;
  height: number;
  /** Size of the written file. */
  bytes: number;
  provider: ExecutionProvider;
  /** The precision the model ran at (int8 only on the CPU provider). */
  precision: Precision;
  /** What the job was estimated to need, and whether it streamed. */
  budget: JobBudget;
  warnings?: string[];
  /** Present when the job asked for face enhancement. */
  faces?: FaceReport;
  /** Milliseconds per stage (stageTimes.ts). */
  stages: StageTimes;
}

/** The only face warning: an image where face enhancement was asked for and found nothing to do. */
export function noFacesWarning(inputName: string): string {
  return `No face was found in "${inputName}": it was upscaled without face enhancement.`;
}

/** The face stage reaches the output only by rectangles, so in-memory and disk-backed outputs both work. */
function outputRegions(output: OutputRaster): OutputRegions {
  return {
    width: output.width,
    height: output.height,
    read: (r) => output.readRect(r.x, r.y, r.width, r.height),
    write: (r, px) => output.writeRect(r.x, r.y, px),
  };
}

export async function upscaleImage(job: UpscaleJob, inference: Inference): Promise<UpscaleResult> {
  const limits: ImageLimits = { ...DEFAULT_LIMITS, ...job.limits };
  const name = job.inputName;
  job.signal?.throwIfAborted();
  const clock = new StageClock();

  const info = await clock.time('probe', () => probeImage(job.input, name, limits));
  const plan = planOutput(info.width, info.height, job.scale, job.format, {
    name,
    maxOutputPixels: limits.maxOutputPixels,
    ...(job.size ? { size: job.size, nativeScale: job.model.entry.scale } : {}),
  });
  // The model's pass: `out` is what the tiles are stitched into; `plan.final` is what is written.
  const { scale, stitched: out } = plan;
  const resize = out.width !== plan.final.width || out.height !== plan.final.height ? plan.final : undefined;
  if (job.faces && info.width * info.height > FACE_MAX_INPUT_PIXELS) {
    throw new ImageInputError(
      name,
      `"${name}" is ${info.width}×${info.height} pixels: face enhancement works on images up to ${FACE_MAX_INPUT_PIXELS / 1e6} megapixel. Turn off Enhance faces for this image.`,
    );
  }
  const session = await clock.time('session', () => inference.session(job.model));
  const tileSize = job.tileSize ?? chooseTileSize(info.width, info.height, session.provider, session.precision);
  // 16 bits survive only into PNG; for JPEG/WebP the stitch writes 8-bit directly (half the memory).
  const outDepth = info.depth === 16 && job.format === 'png' ? 16 : 8;
  const budget = estimateJob(
    {
      inWidth: info.width,
      inHeight: info.height,
      hasAlpha: info.hasAlpha,
      outDepth,
      outWidth: out.width,
      outHeight: out.height,
      format: job.format,
      tileSize,
    },
    job.outputMode ?? 'auto',
    limits.streamAboveBytes,
  );
  const outputDir = path.dirname(job.outputPath);
  const tempDir = job.tempDir ?? outputDir;
  await mkdir(outputDir, { recursive: true });
  // What a killed engine left (its encode's temp files, a streamed raster) goes before this job adds its own.
  await sweepStaleTemps(outputDir);
  if (budget.streamed && tempDir !== outputDir) {
    await mkdir(tempDir, { recursive: true });
    await sweepStaleTemps(tempDir);
  }
  await checkDiskBudget({
    name,
    budget,
    outputDir,
    tempDir,
    reserveBytes: limits.diskReserveBytes,
    ...(job.freeDisk ? { freeDisk: job.freeDisk } : {}),
  });

  const temps: string[] = [];
  let input: InputRaster | undefined;
  let target: DiskRaster | undefined;
  let stopEncodeClock: (() => void) | undefined;
  let iccFile: { path: string; remove: () => Promise<void> } | undefined;
  try {
    if (budget.streamed) {
      const decoded = tempRasterPath(tempDir, '.v');
      temps.push(decoded);
      input = await clock.time('decode', () => decodeToDisk(job.input, name, info, limits, decoded));
    } else {
      input = memoryInput(await clock.time('decode', () => decodeImage(job.input, name, info, limits)));
    }
    job.signal?.throwIfAborted();
    const { width, height } = input;
    const channels = input.hasAlpha ? 4 : 3;
    // Window-attention models (imported OmniSR, SwinIR…) get tiles grown to their window multiple.
    const window = job.model.entry.kind === 'custom' ? (job.model.entry.window ?? 1) : 1;
    const tiles = planTiles(width, height, tileSize, DEFAULT_OVERLAP, window);
    const runs = input.hasAlpha ? 2 : 1;
    const units = tiles.tiles.reduce((a, t) => a + t.pw * t.ph, 0) * runs;
    // Only a job whose progress is watched needs the rate before its first tile (runRate.ts).
    const prior = job.onProgress ? await clock.time('session', () => sessionRate(session, window)) : undefined;
    job.signal?.throwIfAborted();
    const progress = new JobProgress(job.onProgress, units, out.width * out.height, job.format, undefined, prior);
    progress.start();

    let output: OutputRaster;
    if (budget.streamed) {
      const file = tempRasterPath(tempDir, '.tif');
      temps.push(file);
      target = DiskRaster.create(file, out.width, out.height, channels, outDepth);
      output = target;
    } else {
      // Scales are integers, so out is exactly (width·scale × height·scale): whole tiles map onto whole pixels.
      output = new MemoryRaster(allocRaster(out.width, out.height, channels, outDepth));
    }
    progress.beginTiles();
    // Alpha goes through the same network (replicated into RGB) so edges stay as sharp as the colour.
    await inferTiles({
      input,
      session,
      plan: tiles,
      target: output,
      scale,
      signal: job.signal,
      onTile: (px) => progress.tileDone(px),
      onRunStart: (px) => progress.runStarting(px),
      clock,
      ...(job.turn ? { turn: job.turn } : {}),
    });
    recordRate(session, progress.secondsPerUnit());
    // Faces are detected on and cropped from the input's RGB (see engine/core/faces/faceStage.ts for why); a
    // streamed input is read back once for it, bounded by maxInputPixels.
    const faceInput = job.faces ? input.band(0, input.height).rgb : undefined;
    input.close();
    job.signal?.throwIfAborted();
    if (job.afterStitch) await job.afterStitch(output);
    job.signal?.throwIfAborted();
    const faces =
      job.faces && faceInput
        ? await clock.time('faces', () =>
            enhanceFaces(faceInput, scale, outputRegions(output), inference, {
              ...job.faces!,
              ...(job.signal ? { signal: job.signal } : {}),
            }),
          )
        : undefined;
    job.signal?.throwIfAborted();
    const faceWarnings = faces?.found === 0 ? [noFacesWarning(name)] : [];

    stopEncodeClock = progress.beginEncode();
    job.onEncode?.();
    // Test-only (CRISP_TEST_GATE_DIR; a no-op in production): an image held here is past its inference.
    await holdPoint(encodePoint(name), job.signal);
    job.signal?.throwIfAborted();
    const metaStart = performance.now();
    const carry = job.metadata ? await carriedMetadata(job.input, job.metadata) : undefined;
    iccFile = carry?.icc ? await iccProfileFile(carry.icc) : undefined;
    clock.add('metadata', performance.now() - metaStart);
    const opts: EncodeOptions = {
      format: job.format,
      compression: job.compression,
      ...(resize ? { resize } : {}),
      ...(input.exif ? { exif: input.exif } : {}),
      ...(carry ? { carry: { ...carry, ...(iccFile ? { iccPath: iccFile.path } : {}) } } : {}),
    };
    let result: { width: number; height: number; bytes: number; warnings: string[] };
    if (target) {
      target.close();
      result = await clock.time('encode', () => encodeDiskRaster(target!, opts, job.outputPath, job.signal));
    } else {
      // Encoded straight into the file (never the whole encoded image in memory), then flushed and renamed.
      result = await clock.time('encode', () =>
        encodeRasterToFile((output as MemoryRaster).raster, opts, job.outputPath, job.signal),
      );
    }
    stopEncodeClock();
    progress.done();
    return {
      width: result.width,
      height: result.height,
      bytes: result.bytes,
      provider: session.provider,
      precision: session.precision ?? 'fp32',
      budget,
      stages: clock.finish(),
      ...(result.warnings.length > 0 || faceWarnings.length > 0
        ? { warnings: [...result.warnings, ...faceWarnings] }
        : {}),
      ...(faces ? { faces } : {}),
    };
  } finally {
    stopEncodeClock?.();
    await iccFile?.remove();
    input?.close();
    target?.close();
    for (const t of temps) await removeTemp(t);
  }
}
