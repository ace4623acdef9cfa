/**
 * The HTTP server under the Fastify app, created with every time and connection bound explicit (Node's
 * defaults let a body trickle forever: requestTimeout 0 in Fastify, no maxConnections), plus:
 * - a per-IP connection cap, so one client cannot take every connection slot (its own idle connections
 *   give way to its new one, like idle connections do under the total cap below);
 * - idle connections give way: when every slot is taken, a new connection closes the connection that has
 *   been idle longest (no request in flight, no byte received since its last answer) instead of being
 *   refused, and past `PRESSURE_SHARE` of the slots idle keep-alive connections are kept only
 *   `pressureKeepAliveMs`. So sockets that sent one request and then idle can never starve a new client;
 *   only connections that are really sending or being answered hold slots;
 * - a minimum body data rate (Apache mod_reqtimeout's model): a request body must start within
 *   `bodyTimeoutMs`, and the deadline then moves one second later for every `bodyMinRate` bytes received,
 *   so a body trickled at 1 byte/s is cut after about `bodyTimeoutMs`, whatever its Content-Length.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { ServerLimits } from './options.js';

type Bounds = Pick<
  ServerLimits,
  | 'requestTimeoutMs'
  | 'headersTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'pressureKeepAliveMs'
  | 'connectionTimeoutMs'
  | 'maxConnections'
  | 'maxConnectionsPerIp'
  | 'bodyTimeoutMs'
  | 'bodyMinRate'
>;

/** Share of maxConnections above which idle keep-alive connections get the short keep-alive. */
export const PRESSURE_SHARE = 0.75;

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
  // The total is enforced below rather than by Node's server.maxConnections, which refuses the new
  // connection even when an idle one could make room.
  const slots = new ConnectionSlots(b);
  const bodies = new BodyRates(b);
  server.on('connection', (socket: Socket) => slots.admit(socket));
  // Runs for every request, status polls included: one listener, no timer of its own (BodyRates).
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    slots.busy(socket);
    const body = bodies.watch(req, res);
    res.once('close', () => {
      if (body) bodies.unwatch(body);
      slots.idle(socket);
      server.keepAliveTimeout = slots.keepAliveMs();
    });
  });
  server.once('close', () => bodies.stop());
  return server;
}

/** Open connections, per IP and in all, with the idle ones in the order they became idle. */
class ConnectionSlots {
  private readonly perIp = new Map<string, number>();
  private readonly open = new Set<Socket>();
  /** Idle sockets, oldest first (Map keeps insertion order) → their bytesRead when they became idle. */
  private readonly idleSince = new Map<Socket, number>();

  constructor(private readonly b: Bounds) {}

  admit(socket: Socket): void {
    const ip = socket.remoteAddress ?? '';
    const n = (this.perIp.get(ip) ?? 0) + 1;
    // Over either cap, an idle connection gives way first: of the same address for the per-address cap
    // (a client's own idle keep-alive or lingering sockets must not lock it out), of any for the total.
    if (
      (n > this.b.maxConnectionsPerIp && !this.evictIdle(ip)) ||
      (this.open.size >= this.b.maxConnections && !this.evictIdle())
    ) {
      socket.destroy();
      return;
    }
    this.perIp.set(ip, n);
    this.open.add(socket);
    // A fresh connection holds its slot like an idle one until its first request's bytes arrive.
    this.idleSince.set(socket, socket.bytesRead);
    socket.once('close', () => {
      this.open.delete(socket);
      this.idleSince.delete(socket);
      const left = (this.perIp.get(ip) ?? 1) - 1;
      if (left > 0) this.perIp.set(ip, left);
      else this.perIp.delete(ip);
    });
  }

  busy(socket: Socket): void {
    this.idleSince.delete(socket);
  }

  idle(socket: Socket): void {
    if (socket.destroyed || !this.open.has(socket)) return;
    this.idleSince.delete(socket);
    this.idleSince.set(socket, socket.bytesRead);
  }

  /** The keep-alive for connections that become idle now: short while slots are scarce. */
  keepAliveMs(): number {
    return this.open.size >= this.b.maxConnections * PRESSURE_SHARE
      ? Math.min(this.b.pressureKeepAliveMs, this.b.keepAliveTimeoutMs)
      : this.b.keepAliveTimeoutMs;
  }

  /** Closes the connection idle longest (from `ip` when given); false when every such connection is busy. */
  private evictIdle(ip?: string): boolean {
    for (const [socket, bytes] of this.idleSince) {
      if (ip !== undefined && socket.remoteAddress !== ip) continue;
      this.idleSince.delete(socket);
      // Bytes arrived since it became idle: a request is on its way (its headers are being read).
      if (socket.bytesRead > bytes || socket.destroyed) continue;
      this.open.delete(socket);
      socket.destroy();
      return true;
    }
    return false;
  }
}

/** The answer to a body that arrives too slowly: the contract's error shape, then the connection closes. */
function slowBodyAnswer(b: Bounds): string {
  const body = JSON.stringify(
    `Request Timeout: the request body arrived slower than ${b.bodyMinRate} bytes/s (after the first ${Math.round(b.bodyTimeoutMs / 1000)} s)`,
  );
  return `HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** How often a body's rate is checked; a check this much later than planned means the event loop was busy. */
const RATE_CHECK_MS = 1_000;
const LATE_MS = 250;

/** A request body being watched: received bytes are counted on the socket, from `base`. */
interface WatchedBody {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  socket: Socket;
  base: number;
  /** The body's deadline before any byte; moved later by the time credited to the server (below). */
  deadlineBase: number;
  /** When this body was last checked. */
  last: number;
}

/**
 * Cuts a request whose body falls behind the minimum rate: received bytes must stay above
 * `bodyMinRate × (elapsed − bodyTimeoutMs)`. Counted on the socket (bytesRead), so watching never
 * touches the body stream the routes read. Only the client's time counts: a stretch in which the server
 * itself was not reading — its event loop busy (the check ran late) or the route not consuming what already
 * arrived (bytes buffered in the request) — is credited to the client, so a busy server never blames it.
 * Ends when the body is complete or the answer is sent.
 * Every watched body is checked by one shared timer that runs only while some body is watched: a request
 * costs an entry in a set, not a timer and listeners of its own (status polls are the hot path).
 */
class BodyRates {
  private readonly watched = new Set<WatchedBody>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly b: Bounds) {}

  /** Starts watching a request that has a body; the caller unwatches it when its response closes. */
  watch(req: http.IncomingMessage, res: http.ServerResponse): WatchedBody | undefined {
    const length = Number(req.headers['content-length'] ?? 0);
    if (!(length > 0) && req.headers['transfer-encoding'] === undefined) return undefined;
    const now = Date.now();
    const w: WatchedBody = {
      req,
      res,
      socket: req.socket,
      base: req.socket.bytesRead,
      deadlineBase: now + this.b.bodyTimeoutMs,
      last: now,
    };
    this.add(w);
    return w;
  }

  private add(w: WatchedBody): void {
    this.watched.add(w);
    if (!this.timer) {
      this.timer = setInterval(() => this.check(), RATE_CHECK_MS);
      this.timer.unref();
    }
  }

  unwatch(w: WatchedBody): void {
    this.watched.delete(w);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  private ended(w: WatchedBody): boolean {
    return w.req.complete || w.res.writableEnded || w.socket.destroyed;
  }

  private over(w: WatchedBody): boolean {
    return Date.now() > w.deadlineBase + ((w.socket.bytesRead - w.base) / this.b.bodyMinRate) * 1000;
  }

  private cut(w: WatchedBody): void {
    if (w.res.headersSent) w.socket.destroy();
    else w.socket.write(slowBodyAnswer(this.b), () => w.socket.destroy());
  }

  private check(): void {
    const now = Date.now();
    for (const w of this.watched) {
      if (this.ended(w)) {
        this.watched.delete(w);
        continue;
      }
      if (now - w.last > RATE_CHECK_MS + LATE_MS || w.req.readableLength > 0) w.deadlineBase += now - w.last;
      w.last = now;
      if (!this.over(w)) continue;
      // Let the poll phase read what may have arrived while the timer waited, then decide.
      this.watched.delete(w);
      setImmediate(() => {
        if (this.ended(w)) return;
        if (this.over(w)) this.cut(w);
        else this.add(w);
      });
    }
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
