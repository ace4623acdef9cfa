export { noFacesWarning, upscaleImage, type UpscaleJob, type UpscaleResult } from './upscale.js';
export { ImageInputError, isImageInputError } from './errors.js';
export {
  DEFAULT_LIMITS,
  checkOutputFits,
  probeImage,
  type ImageInfo,
  type ImageLimits,
  type ImageSource,
  type InputFormat,
  type OutputCheckOptions,
  type OutputSize,
} from './probe.js';
export { decodeImage, type DecodedImage } from './decode.js';
export { DEFAULT_OVERLAP, chooseTileSize, planTiles, type Tile, type TilePlan } from './tiles.js';
export { inferTiles, tileInput } from './infer.js';
export { stitchTile } from './stitch.js';
export { resizeRaster } from './resize.js';
export { encodeRaster, jpegQuality, pngLevel, type EncodeOptions, type EncodedImage } from './encode.js';
export type { BitDepth, PixelArray, Raster } from './raster.js';
