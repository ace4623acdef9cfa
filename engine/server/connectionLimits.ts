/**
 * The HTTP server under the Fastify app, created with every time and connection bound explicit (Node's
 * defaults let a body trickle forever: requestTimeout 0 in Fastify, no maxConnections), plus a per-IP
 * connection cap so one client cannot take every connection slot.
 */
import http from 'node:http';
import type { ServerLimits } from './options.js';

type Bounds = Pick<
  ServerLimits,
  | 'requestTimeoutMs'
  | 'headersTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'connectionTimeoutMs'
  | 'maxConnections'
  | 'maxConnectionsPerIp'
>;

export function createBoundedServer(handler: http.RequestListener, b: Bounds): http.Server {
  const requestTimeout = b.requestTimeoutMs;
  // Node refuses a headers timeout above the request timeout.
  const headersTimeout = Math.min(b.headersTimeoutMs, requestTimeout);
  const server = http.createServer(
    {
      requestTimeout,
      headersTimeout,
      keepAliveTimeout: b.keepAliveTimeoutMs,
      // Node checks the two timeouts above on this interval (30 s by default), so a short timeout
      // would otherwise be enforced up to 30 s late.
      connectionsCheckingInterval: Math.max(
        100,
        Math.min(5_000, Math.floor(Math.min(requestTimeout, headersTimeout) / 4)),
      ),
    },
    handler,
  );
  server.setTimeout(b.connectionTimeoutMs);
  server.maxConnections = b.maxConnections;

  const perIp = new Map<string, number>();
  server.on('connection', (socket) => {
    const ip = socket.remoteAddress ?? '';
    const n = (perIp.get(ip) ?? 0) + 1;
    if (n > b.maxConnectionsPerIp) {
      socket.destroy();
      return;
    }
    perIp.set(ip, n);
    socket.once('close', () => {
      const left = (perIp.get(ip) ?? 1) - 1;
      if (left > 0) perIp.set(ip, left);
      else perIp.delete(ip);
    });
  });
  return server;
}
