/**
 * Serves the built renderer on app://crisp/ instead of file://: a real origin for the CSP's 'self',
 * no access to the rest of the disk, and the same path checks as `crisp ui`'s static server.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { resolveStaticPath } from '../../app/ui/staticFiles.js';
import { RENDERER_CSP } from './windowSecurity.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** A protocol handler: Request in, Response out (what protocol.handle expects). */
export function createAppProtocolHandler(rendererDir: string): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    const file = resolveStaticPath(rendererDir, url.pathname);
    if (!file) return new Response('Not found', { status: 404 });
    try {
      const body = await readFile(file);
      return new Response(body, {
        status: 200,
        headers: {
          'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
          'content-security-policy': RENDERER_CSP,
          'x-content-type-options': 'nosniff',
        },
      });
    } catch {
      return new Response('Not found', { status: 404 });
    }
  };
}
