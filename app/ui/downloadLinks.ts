/**
 * Signed download links for `crisp ui`: the page asks (with its token) for a link to one or more
 * finished results and gets a same-origin URL carrying an HMAC over the ids and an expiry. The link
 * itself needs no token, so a plain `<a download>` navigation can use it, and it cannot be widened to
 * other items or reused after it expires.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const DOWNLOAD_PATH = '/download';
/** Long enough for a slow click, short enough that a copied link soon stops working. */
export const LINK_LIFETIME_MS = 5 * 60_000;

export interface DownloadSigner {
  /** A path + query for these ids, valid for LINK_LIFETIME_MS. */
  sign(ids: string[], now?: number): string;
  /** The ids a link names, or a sentence saying why it is refused. */
  verify(query: URLSearchParams, now?: number): { ids: string[] } | { refused: string };
}

export function createDownloadSigner(key: Buffer = randomBytes(32)): DownloadSigner {
  const mac = (ids: string, exp: string) => createHmac('sha256', key).update(`${ids}\n${exp}`).digest();
  return {
    sign(ids, now = Date.now()) {
      const list = ids.join(',');
      const exp = String(now + LINK_LIFETIME_MS);
      const q = new URLSearchParams({ ids: list, exp, sig: mac(list, exp).toString('base64url') });
      return `${DOWNLOAD_PATH}?${q}`;
    },
    verify(query, now = Date.now()) {
      const ids = query.get('ids') ?? '';
      const exp = query.get('exp') ?? '';
      const sig = Buffer.from(query.get('sig') ?? '', 'base64url');
      const want = mac(ids, exp);
      if (!ids || sig.length !== want.length || !timingSafeEqual(sig, want))
        return { refused: 'This download link is not valid: use the Download button in Crisp.' };
      if (!(Number(exp) > now)) return { refused: 'This download link has expired: press Download again in Crisp.' };
      return { ids: ids.split(',') };
    },
  };
}

/** `attachment` with an ASCII fallback and the exact UTF-8 name (RFC 6266 / 5987). */
export function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
