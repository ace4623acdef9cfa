/**
 * Serves the built renderer (vite's output) for `crisp ui`. Only files below the root are reachable;
 * anything that is not a known asset answers 404 rather than falling back to index.html, because the
 * renderer has a single page and a fallback would only hide broken asset paths.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** Resolves a URL path inside root, or null when it would escape it. */
export function resolveStaticPath(root: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const rel = decoded === '/' || decoded === '' ? 'index.html' : decoded.replace(/^\/+/, '');
  const full = path.resolve(root, rel);
  const rootWithSep = path.resolve(root) + path.sep;
  return full.startsWith(rootWithSep) ? full : null;
}

export async function serveStatic(
  root: string,
  urlPath: string,
  res: ServerResponse,
  extraHeaders: Record<string, string>,
): Promise<boolean> {
  const file = resolveStaticPath(root, urlPath);
  if (!file) return false;
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) return false;
  const type = MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
  // Hashed assets never change; index.html must be re-read so a rebuilt renderer is picked up.
  const cache = file.endsWith('index.html') ? 'no-store' : 'public, max-age=31536000, immutable';
  res.writeHead(200, {
    ...extraHeaders,
    'content-type': type,
    'content-length': String(info.size),
    'cache-control': cache,
  });
  await new Promise<void>((resolve, reject) => {
    createReadStream(file).on('error', reject).on('end', resolve).pipe(res);
  });
  return true;
}
