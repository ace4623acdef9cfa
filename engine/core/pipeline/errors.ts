import { CrispError } from '../../contract/errorCatalog.js';

/**
 * ImageInputError: a problem with the user's image (unreadable, too large, not representable in the chosen
 * format): the catalog's unusable-image row. Its message is shown to end users as is: it names the file and
 * says what to do.
 */
export class ImageInputError extends CrispError {
  override readonly name = 'ImageInputError';
  constructor(
    readonly fileName: string,
    message: string,
  ) {
    super('unusable-image', message);
  }
}

export function isImageInputError(e: unknown): e is ImageInputError {
  return e instanceof ImageInputError;
}
