/**
 * upscaleImage: probe → decode → tile plan → infer (+ per-tile resize, stitch) → encode → atomic write.
 * Every refusal that is about the user's image is an ImageInputError raised before heavy work starts.
 * Only the requested output is ever held at full size (tiles are resized to the requested scale before they
 * are stitched), so the output pixel limit applies to the requested output alone, not the model's native one.
 */
import type { SaveImageAs, Scale } from '../contract/index.js';
import type { ExecutionProvider, Inference } from '../inference/index.js';
import type { ResolvedModel } from '../models/catalog.js';
import { decodeImage } from './decode.js';
import { encodeRaster } from './encode.js';
import { inferTiles } from './infer.js';
import { DEFAULT_LIMITS, checkOutputFits, probeImage, type ImageLimits, type ImageSource } from './probe.js';
import { allocRaster } from './raster.js';
import { chooseTileSize, planTiles } from './tiles.js';
import { writeFileAtomic } from '../storage/atomicFile.js';
import { enhanceFaces, memoryRegions, type FaceReport, type FaceStageOptions } from '../faces/faceStage.js';

export interface UpscaleJob {
  input: ImageSource;
  /** The user's name for the input, used in error messages. */
  inputName: string;
  model: ResolvedModel;
  scale: Scale;
  format: SaveImageAs;
  /** 0–100, 0 = best quality (see encode.ts for the mapping). */
  compression: number;
  outputPath: string;
  /** Tile side in input pixels; default chosen from the image size and the execution provider. */
  tileSize?: number;
  signal?: AbortSignal;
  /** Monotonic fractions 0..1: tiles done, then encode, then 1 once the file is in place. */
  onProgress?: (fraction: number) => void;
  /** Defaults: DEFAULT_LIMITS. */
  limits?: Partial<ImageLimits>;
  /** Face enhancement after stitch/resize and before encode (absent: none). */
  faces?: Omit<FaceStageOptions, 'signal'>;
}

export interface UpscaleResult {
  width: number;
  height: number;
  /** Size of the written file. */
  bytes: number;
  provider: ExecutionProvider;
  warnings?: string[];
  /** Present when the job asked for face enhancement. */
  faces?: FaceReport;
}

/** The only face warning: an image where face enhancement was asked for and found nothing to do. */
export function noFacesWarning(inputName: string): string {
  return `No face was found in "${inputName}": it was upscaled without face enhancement.`;
}

/** Share of the progress bar given to inference; encode and write take the rest. */
const INFER_SHARE = 0.9;

export async function upscaleImage(job: UpscaleJob, inference: Inference): Promise<UpscaleResult> {
  const limits: ImageLimits = { ...DEFAULT_LIMITS, ...job.limits };
  const name = job.inputName;
  let last = 0;
  const progress = (f: number) => {
    // Never report a step backwards, whatever the caller's rounding.
    if (f < last) return;
    last = f;
    job.onProgress?.(f);
  };
  job.signal?.throwIfAborted();
  progress(0);

  const info = await probeImage(job.input, name, limits);
  const out = checkOutputFits(info.width, info.height, job.scale, job.format, { name, maxOutputPixels: limits.maxOutputPixels });
  const session = await inference.session(job.model);

  const decoded = await decodeImage(job.input, name, info, limits);
  job.signal?.throwIfAborted();
  const { width, height } = decoded.rgb;
  // 16 bits survive only into PNG; for JPEG/WebP the stitch writes 8-bit directly (half the memory).
  const depth = decoded.rgb.depth === 16 && job.format === 'png' ? 16 : 8;
  // Scales are integers, so out is exactly (width·scale × height·scale): whole tiles map onto whole pixels.
  const target = allocRaster(out.width, out.height, decoded.alpha ? 4 : 3, depth);
  const plan = planTiles(width, height, job.tileSize ?? chooseTileSize(width, height, session.provider));
  const total = plan.tiles.length * (decoded.alpha ? 2 : 1);
  let done = 0;
  const onTile = () => progress((++done / total) * INFER_SHARE);

  // Alpha goes through the same network (replicated into RGB) so edges stay as sharp as the colour.
  await inferTiles({ rgb: decoded.rgb, ...(decoded.alpha ? { alpha: decoded.alpha } : {}), session, plan, target, scale: job.scale, signal: job.signal, onTile });
  job.signal?.throwIfAborted();
  const faces = job.faces ? await enhanceFaces(decoded.rgb, job.scale, memoryRegions(target), inference, { ...job.faces, ...(job.signal ? { signal: job.signal } : {}) }) : undefined;
  job.signal?.throwIfAborted();
  const encoded = await encodeRaster(target, { format: job.format, compression: job.compression, exif: decoded.exif });
  progress(0.95);
  job.signal?.throwIfAborted();
  await writeFileAtomic(job.outputPath, encoded.data, job.signal);
  progress(1);
  return {
    width: encoded.width,
    height: encoded.height,
    bytes: encoded.data.length,
    provider: session.provider,
    ...(encoded.warnings.length > 0 || faces?.found === 0 ? { warnings: [...encoded.warnings, ...(faces?.found === 0 ? [noFacesWarning(name)] : [])] } : {}),
    ...(faces ? { faces } : {}),
  };
}
