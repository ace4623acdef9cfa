import { CrispError } from '../../engine/contract/index.js';

/**
 * A refusal of what the person typed (a flag, an argument, a missing setting): printed as one `crisp: error:`
 * line; its catalog row (`usage`) gives the exit status.
 */
export function usageError(message: string): CrispError {
  return new CrispError('usage', message);
}
