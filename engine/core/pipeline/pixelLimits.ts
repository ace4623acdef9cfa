/**
 * The default pixel limits, in a module that imports nothing: the service's limits (engine/service/limits.ts, which
 * the CLI loads at startup) read them without loading sharp.
 *
 * 2^30 pixels (32768², about 1.07 gigapixels): a 8192² image at ×4. Large outputs stream to a disk raster,
 * and large inputs decode to disk the same way (inputRaster.ts), so an input's size costs disk, not memory:
 * an input is accepted whenever its output fits. The input limit is therefore the output limit (an image at
 * ×1 is its own output); it still bounds what the decoder is ever asked to decode, from the header alone.
 */
export const MAX_OUTPUT_PIXELS = 2 ** 30;
export const MAX_INPUT_PIXELS = MAX_OUTPUT_PIXELS;
