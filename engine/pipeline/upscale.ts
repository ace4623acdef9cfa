/**
 * upscaleImage: probe → decode → tile plan → infer (+ stitch) → resize → encode → atomic write.
 * Every refusal that is about the user's image is an ImageInputError raised before heavy work starts.
 */
import type { SaveImageAs, Scale } from '../contract/index.js';
import type { ExecutionProvider, Inference } from '../inference/index.js';
import type { ResolvedModel } from '../models/catalog.js';
import { decodeImage } from './decode.js';
import { encodeRaster } from './encode.js';
import { ImageInputError } from './errors.js';
import { inferTiles } from './infer.js';
import { DEFAULT_LIMITS, checkOutputFits, probeImage, type ImageLimits, type ImageSource } from './probe.js';
import { allocRaster } from './raster.js';
import { resizeRaster } from './resize.js';
import { chooseTileSize, planTiles } from './tiles.js';
import { writeFileAtomic } from '../storage/atomicFile.js';

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
}

export interface UpscaleResult {
  width: number;
  height: number;
  /** Size of the written file. */
  bytes: number;
  provider: ExecutionProvider;
  warnings?: string[];
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
  const native = session.scale;
  if (info.width * native * info.height * native > limits.maxOutputPixels) {
    throw new ImageInputError(
      name,
      `"${name}" (${info.width}×${info.height}) is too large to upscale with this model. Reduce the image size first.`,
    );
  }

  const decoded = await decodeImage(job.input, name, info, limits);
  job.signal?.throwIfAborted();
  const { width, height } = decoded.rgb;
  // 16 bits survive only into PNG; for JPEG/WebP the stitch writes 8-bit directly (half the memory).
  const depth = decoded.rgb.depth === 16 && job.format === 'png' ? 16 : 8;
  const target = allocRaster(width * native, height * native, decoded.alpha ? 4 : 3, depth);
  const plan = planTiles(width, height, job.tileSize ?? chooseTileSize(width, height, session.provider));
  const total = plan.tiles.length * (decoded.alpha ? 2 : 1);
  let done = 0;
  const onTile = () => progress((++done / total) * INFER_SHARE);

  await inferTiles({ source: decoded.rgb, session, plan, target, channelOffset: 0, signal: job.signal, onTile });
  if (decoded.alpha) {
    // Alpha goes through the same network (replicated into RGB) so edges stay as sharp as the colour.
    await inferTiles({ source: decoded.alpha, session, plan, target, channelOffset: 3, signal: job.signal, onTile });
  }

  const resized = await resizeRaster(target, out.width, out.height);
  job.signal?.throwIfAborted();
  const encoded = await encodeRaster(resized, { format: job.format, compression: job.compression, exif: decoded.exif });
  progress(0.95);
  job.signal?.throwIfAborted();
  await writeFileAtomic(job.outputPath, encoded.data, job.signal);
  progress(1);
  return {
    width: encoded.width,
    height: encoded.height,
    bytes: encoded.data.length,
    provider: session.provider,
    ...(encoded.warnings.length > 0 ? { warnings: encoded.warnings } : {}),
  };
}
