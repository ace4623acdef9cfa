/**
 * Logger settings. Requests are logged as method + path only: the query string of a part URL or a
 * download link is a bearer credential, and X-API-Key is redacted even if a serializer changes.
 */
import type { FastifyServerOptions } from 'fastify';

interface LoggableRequest {
  method?: string;
  url?: string;
  ip?: string;
  socket?: { remoteAddress?: string };
}

export function pathOnly(url: string | undefined): string {
  if (!url) return '';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

export function loggerOptions(level: string, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: { paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]'], censor: '[redacted]' },
    serializers: {
      req: (req: LoggableRequest) => ({ method: req.method, url: pathOnly(req.url), remoteAddress: req.ip ?? req.socket?.remoteAddress }),
    },
  };
}
