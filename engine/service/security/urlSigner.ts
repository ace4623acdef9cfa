/**
 * HMAC-signed, expiring URLs (presigned part uploads, download links). The signature covers the path
 * and every query parameter, so a URL cannot be re-pointed at another upload, part or file.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface UrlSigner {
  /** Returns `pathname?params&expires=…&signature=…` (no origin). */
  sign(pathname: string, params: Record<string, string>, expiresAt: number): string;
  /** Checks a path+query (or full URL); returns its params, or a reason it is refused. */
  verify(
    url: string,
    now?: number,
  ): { ok: true; pathname: string; params: Record<string, string> } | { ok: false; reason: 'invalid' | 'expired' };
}

function canonical(pathname: string, params: Record<string, string>, expiresAt: number): string {
  const keys = Object.keys(params).sort();
  return [pathname, ...keys.map((k) => `${k}=${params[k]}`), `expires=${expiresAt}`].join('\n');
}

export function createUrlSigner(secret: Buffer): UrlSigner {
  const mac = (text: string) => createHmac('sha256', secret).update(text).digest('base64url');
  return {
    sign(pathname, params, expiresAt) {
      const q = new URLSearchParams({ ...params, expires: String(expiresAt) });
      q.set('signature', mac(canonical(pathname, params, expiresAt)));
      return `${pathname}?${q.toString()}`;
    },
    verify(url, now = Date.now()) {
      let parsed: URL;
      try {
        parsed = new URL(url, 'http://signed.invalid');
      } catch {
        return { ok: false, reason: 'invalid' };
      }
      const params: Record<string, string> = {};
      let signature = '';
      let expires = Number.NaN;
      for (const [k, v] of parsed.searchParams) {
        if (k === 'signature') signature = v;
        else if (k === 'expires') expires = Number(v);
        else params[k] = v;
      }
      if (!signature || !Number.isFinite(expires)) return { ok: false, reason: 'invalid' };
      const expected = Buffer.from(mac(canonical(parsed.pathname, params, expires)));
      const given = Buffer.from(signature);
      if (expected.length !== given.length || !timingSafeEqual(expected, given))
        return { ok: false, reason: 'invalid' };
      if (now > expires) return { ok: false, reason: 'expired' };
      return { ok: true, pathname: parsed.pathname, params };
    },
  };
}

/** The signing secret lives in the data directory (0600) so signed URLs survive a restart. */
export async function loadOrCreateSecret(dataDir: string): Promise<Buffer> {
  const file = path.join(dataDir, 'secret.key');
  let damaged = false;
  try {
    const hex = (await readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
    damaged = true;
  } catch {
    // first start: created below
  }
  await mkdir(dataDir, { recursive: true });
  const secret = randomBytes(32);
  try {
    // Exclusive create: processes sharing a storage directory that start together must end up with one
    // secret (the loser reads the winner's), or links signed by one would fail on the other.
    await writeFile(file, secret.toString('hex'), { mode: 0o600, flag: damaged ? 'w' : 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    for (let i = 0; i < 50; i++) {
      const hex = (await readFile(file, 'utf8')).trim();
      if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${file} does not hold a 64-hex-digit secret: remove it to create a new one`);
  }
  await chmod(file, 0o600);
  return secret;
}
