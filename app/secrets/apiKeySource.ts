/**
 * The CLI's API key: from --api-key-file (first line) or CRISP_API_KEY. Never from a command-line
 * argument, which would land in shell history and `ps`.
 */
import { readFile } from 'node:fs/promises';
import { CrispError } from '../../engine/contract/index.js';

/** No usable API key: a missing setting of the person's, catalog row usage. */
export class ApiKeyMissingError extends CrispError {
  override readonly name = 'ApiKeyMissingError';
  constructor(message: string) {
    super('usage', message, { params: { detail: message } });
  }
}

export async function resolveCliApiKey(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  if (file) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      throw new ApiKeyMissingError(`cannot read the API key file ${file}`);
    }
    const key = text.split(/\r?\n/)[0]?.trim() ?? '';
    if (!key) throw new ApiKeyMissingError(`the API key file ${file} is empty`);
    return key;
  }
  const key = env.CRISP_API_KEY?.trim();
  if (!key) throw new ApiKeyMissingError('--remote needs an API key: pass --api-key-file FILE or set CRISP_API_KEY');
  return key;
}
