/**
 * A SecretStore in one JSON file readable by its owner only (0600, in a 0700 folder). The temp file is
 * created 0600 before any byte is written, so the secret is never on disk with wider permissions.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Mutex } from '../../engine/service/index.js';
import type { SecretStore } from './secretStore.js';

export function createFileSecretStore(file: string): SecretStore {
  const lock = new Mutex();

  async function read(): Promise<Record<string, string>> {
    try {
      const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
      if (!parsed || typeof parsed !== 'object') return {};
      return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
    } catch {
      return {};
    }
  }

  async function write(values: Record<string, string>): Promise<void> {
    const dir = path.dirname(file);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const fh = await open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(JSON.stringify(values));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, file);
      await chmod(file, 0o600); // in case an older file existed with other permissions
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  return {
    get: async (name) => (await read())[name],
    set: (name, value) =>
      lock.run(async () => {
        const values = await read();
        if (value === null || value === undefined || value === '') delete values[name];
        else values[name] = value;
        await write(values);
      }),
  };
}
