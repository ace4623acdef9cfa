/**
 * Where the API key lives: never in the settings file, logs or error messages. The desktop app supplies a
 * SecretStore on Electron's safeStorage (OS keychain encryption); the CLI and `crisp ui` use the file
 * store below.
 */
export interface SecretStore {
  get(name: string): Promise<string | undefined>;
  /** undefined or null deletes the secret. */
  set(name: string, value: string | null | undefined): Promise<void>;
}

export const API_KEY_SECRET = 'apiKey';

/** In memory only (tests, a one-off CLI run with CRISP_API_KEY). */
export function createMemorySecretStore(initial: Record<string, string> = {}): SecretStore {
  const values = new Map(Object.entries(initial));
  return {
    get: async (name) => values.get(name),
    set: async (name, value) => {
      if (value === null || value === undefined) values.delete(name);
      else values.set(name, value);
    },
  };
}
