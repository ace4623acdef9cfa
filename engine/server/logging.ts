/**
 * Logs an operator can keep: at most one line per request at the default level ("info").
 *   - Fastify's own two lines per request (incoming + completed) are off; `installRequestLog` writes
 *     one line when the answer is sent: method, route pattern (never the URL: the query string of a
 *     part URL or a download link is a bearer credential), status, ms, user id and request id.
 *   - Successful get-task-status polls, the bulk of the traffic, are logged at debug only.
 *   - A refused request's line carries the contract's error code and message; an unexpected failure's
 *     line is at error level and carries the stack (always with the reqId the client can quote).
 *   - X-API-Key and Authorization are redacted from anything that logs headers anyway.
 * `--log-format pretty` turns the JSON lines into one short human-readable line each.
 */
import { Writable } from 'node:stream';
import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';

import type { LogFormat } from './logOptions.js';
export { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logOptions.js';

/** What the error handler tells the request log line about a refusal (one line, not two). */
export interface LoggedRefusal {
  status: number;
  code: string;
  message: string;
  /** An unexpected failure: logged with its stack on the request's one line. */
  err?: unknown;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the error mapping when a request is answered with a contract error. */
    refusal: LoggedRefusal | null;
  }
}

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

export function loggerOptions(
  level: string,
  format: LogFormat = 'json',
  stream?: NodeJS.WritableStream,
): FastifyServerOptions['logger'] {
  const out = stream ?? process.stdout;
  return {
    level,
    stream: format === 'pretty' ? prettyLogStream(out) : out,
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]'],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: LoggableRequest) => ({
        method: req.method,
        url: pathOnly(req.url),
        remoteAddress: req.ip ?? req.socket?.remoteAddress,
      }),
    },
  };
}

/** Fastify options that go with installRequestLog: its own per-request lines off. */
export function requestLogOptions(): Pick<FastifyServerOptions, 'logController'> {
  return { logController: new LogController({ disableRequestLogging: true }) };
}

const LEVEL_VALUE: Record<string, number> & Record<'error' | 'debug' | 'info', number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Infinity,
};

/** One request's log line: what installRequestLog writes, and the status lane (statusLane.ts) too. */
export interface RequestLine {
  method: string;
  /** The route pattern, never the URL (a query string may be a credential). */
  route: string;
  status: number;
  ms: number;
  endpoint: string | undefined;
  user: string | undefined;
  refusal: LoggedRefusal | null;
  /** Given where the logger does not carry it already (Fastify's request logger does). */
  reqId?: string;
}

function lineLevel(status: number, endpoint: string | undefined): 'error' | 'debug' | 'info' {
  return status >= 500 ? 'error' : status < 400 && endpoint === 'get-task-status' ? 'debug' : 'info';
}

/** Whether a request's line would be written at the logger's level (checked first: a poll at info costs nothing). */
export function lineWanted(log: FastifyBaseLogger, status: number, endpoint: string | undefined): boolean {
  return LEVEL_VALUE[lineLevel(status, endpoint)] >= (LEVEL_VALUE[log.level] ?? 0);
}

/** Writes a request's one line, if its level is on: successful polls at debug, failures at error, else info. */
export function writeRequestLine(log: FastifyBaseLogger, l: RequestLine): void {
  if (!lineWanted(log, l.status, l.endpoint)) return;
  const level = lineLevel(l.status, l.endpoint);
  const line: Record<string, unknown> = {
    ...(l.reqId !== undefined ? { reqId: l.reqId } : {}),
    method: l.method,
    route: l.route,
    status: l.status,
    ms: Math.round(l.ms * 10) / 10,
  };
  if (l.user !== undefined) line.user = l.user;
  if (l.refusal) {
    line.code = l.refusal.code;
    if (l.refusal.err !== undefined) line.err = l.refusal.err;
    log[level](line, l.refusal.message);
  } else {
    log[level](line, 'request');
  }
}

export function installRequestLog(app: FastifyInstance): void {
  app.decorateRequest('refusal', null);
  app.addHook('onResponse', (request, reply, done) => {
    if (!lineWanted(request.log, reply.statusCode, request.routeOptions.config.endpoint)) return done();
    writeRequestLine(request.log, {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      ms: reply.elapsedTime,
      endpoint: request.routeOptions.config.endpoint,
      user: request.caller?.userId,
      refusal: request.refusal,
    });
    done();
  });
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** One pino JSON line → `12:01:02.345 INFO  req-7 POST /start-task 200 12.3ms user=usr_… request`. */
export function prettyLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { time, level, msg, reqId, method, route, status, ms, pid: _pid, hostname: _host, err, ...rest } = o;
  const parts = [
    typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '',
    (LEVEL_NAMES[Number(level)] ?? String(level)).padEnd(5),
  ];
  if (reqId !== undefined) parts.push(String(reqId));
  if (method !== undefined) parts.push(`${String(method)} ${String(route)} ${String(status)} ${String(ms)}ms`);
  for (const [k, v] of Object.entries(rest)) parts.push(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  if (msg !== undefined) parts.push(String(msg));
  let line = parts.filter(Boolean).join(' ');
  if (err && typeof err === 'object' && 'stack' in err) line += `\n${String((err as { stack: unknown }).stack)}`;
  return line;
}

export function prettyLogStream(out: NodeJS.WritableStream): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      pending += chunk.toString('utf8');
      let nl = pending.indexOf('\n');
      while (nl >= 0) {
        out.write(`${prettyLine(pending.slice(0, nl))}\n`);
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
      }
      cb();
    },
  });
}
