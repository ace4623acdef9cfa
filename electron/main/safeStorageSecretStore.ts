/**
 * SecretStore on Electron's safeStorage: the API key is encrypted with the OS keychain (Keychain,
 * DPAPI, libsecret/kwallet) and only the ciphertext is written to disk. Where no keychain is available
 * it refuses to store rather than silently writing the key in clear text.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SecretStore } from '../../app/secrets/secretStore.js';

export interface SafeStorageLike {
  isEncryptionAvailable(): boolean;
  encryptString(plain: string): Buffer;
  decryptString(encrypted: Buffer): string;
}

export function createSafeStorageSecretStore(safeStorage: SafeStorageLike, file: string): SecretStore {
  const load = async (): Promise<Record<string, string>> => {
    try {
      return JSON.parse(await readFile(file, 'utf8')) as Record<string, string>;
    } catch {
      return {};
    }
  };
  return {
    async get(name) {
      const sealed = (await load())[name];
      if (!sealed || !safeStorage.isEncryptionAvailable()) return undefined;
      try {
        return safeStorage.decryptString(Buffer.from(sealed, 'base64'));
      } catch {
        return undefined;
      }
    },
    async set(name, value) {
      const all = await load();
      if (value === null || value === undefined) delete all[name];
      else {
        if (!safeStorage.isEncryptionAvailable())
          throw new Error('This system has no keychain to protect the API key, so it was not saved.');
        all[name] = safeStorage.encryptString(value).toString('base64');
      }
      await mkdir(path.dirname(file), { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, JSON.stringify(all), { mode: 0o600 });
      await rename(tmp, file);
    },
  };
}
