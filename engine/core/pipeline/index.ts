export { noFacesWarning, upscaleImage, type UpscaleJob, type UpscaleResult } from './upscale.js';
export { ImageInputError, isImageInputError } from './errors.js';
export {
  DEFAULT_LIMITS,
  checkOutputFits,
  checkPassesFit,
  planOutput,
  probeImage,
  type ImageInfo,
  type ImageLimits,
  type ImageSource,
  type InputFormat,
  type OutputCheckOptions,
  type OutputPlan,
  type OutputSize,
} from './probe.js';
export { decodeImage, type DecodedImage } from './decode.js';
export { DEFAULT_OVERLAP, chooseTileSize, planTiles, type Tile, type TilePlan } from './tiles.js';
export { inferTiles, tileInput } from './infer.js';
export { stitchTile } from './stitch.js';
export { resizeRaster } from './resize.js';
export {
  encodeDiskRaster,
  encodeRaster,
  jpegQuality,
  pngLevel,
  type EncodeOptions,
  type EncodedFile,
  type EncodedImage,
} from './encode.js';
export { DiskRaster, MemoryRaster, type OutputRaster } from './diskRaster.js';
export { decodeToDisk, memoryInput, type InputBand, type InputRaster } from './inputRaster.js';
export {
  checkDiskBudget,
  estimateJob,
  freeDiskBytes,
  type FreeDiskReader,
  type JobBudget,
  type JobShape,
  type OutputMode,
} from './budget.js';
export { JobProgress, stepWithin, type ProgressListener, type ProgressStep } from './progress.js';
export { sweepStaleTemps } from './tempFiles.js';
export type { BitDepth, PixelArray, Raster } from './raster.js';
