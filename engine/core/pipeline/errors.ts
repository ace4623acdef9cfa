import { CrispError } from '../../contract/errorCatalog.js';

/** The catalog rows an image refusal can be: broken bytes, the disk budget, or anything else about the image. */
export type ImageInputCode = 'unusable-image' | 'damaged-image' | 'not-enough-space';

/**
 * ImageInputError: a problem with the user's image (unreadable, too large, not representable in the chosen
 * format, no room on the disk for it). Its message is shown to end users as is: it names the file and says what
 * to do; its code and params (`name`, `detail`) are what a translation is made from.
 */
export class ImageInputError extends CrispError {
  override readonly name = 'ImageInputError';
  constructor(
    readonly fileName: string,
    message: string,
    code: ImageInputCode = 'unusable-image',
    detail?: string,
  ) {
    super(code, message, { params: { name: fileName, ...(detail !== undefined ? { detail } : {}) } });
  }
}

export function isImageInputError(e: unknown): e is ImageInputError {
  return e instanceof ImageInputError;
}
