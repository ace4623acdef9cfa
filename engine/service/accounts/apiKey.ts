/**
 * API keys: 32 random bytes (256 bits), shown once, stored only as sha256. A fast hash is enough here
 * (no scrypt): the key is not a human password, so there is nothing to brute-force from its digest.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'crisp_';

export function generateApiKey(): string {
  return PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key against a stored digest. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  const a = Buffer.from(hashApiKey(key), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
