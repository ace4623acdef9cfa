/**
 * get-task-status, the endpoint clients poll in a loop, answered beside Fastify rather than through it: a
 * poll then costs what the work needs (parse, look up, write the cached answer), not Fastify's per-request
 * machinery (request and reply objects, a child logger, hook runners, the content-type parser), which cost
 * more than the work itself (docs/benchmarks.md, issue 40).
 *
 * Only the plain case takes this lane, decided from the headers before a byte of the body is read:
 * POST /get-task-status, Content-Type application/json, a Content-Length of 1…LANE_MAX_BODY bytes, no
 * Expect, an X-API-Key the key cache knows, the in-memory rate limit, the server not closing, and the route's
 * serialiser known (after its first answer). Anything else goes to Fastify, whose route answers it.
 * The lane runs the route's steps with the route's functions, in the same order: the rate count and its
 * headers (rateLimit.ts), parseJsonBody, the engine, the answer bytes (statusAnswers.ts), the error mapping
 * and the request's log line. The connection-level protections (slots, body rate, timeouts) sit below both
 * lanes (connectionLimits.ts).
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { UpscalingEngine } from '../service/api.js';
import { apiKeyFrom, digestOfKey, type KeyAuthenticator } from './auth.js';
import { mapError } from './errorMapping.js';
import { parseJsonBody } from './jsonBody.js';
import { lineWanted, writeRequestLine, type LoggedRefusal } from './logging.js';
import { rateKeyOf, type RateLimit } from './rateLimit.js';
import type { StatusAnswers } from './routes/statusAnswers.js';

const ROUTE = '/get-task-status';
const JSON_TYPE = 'application/json; charset=utf-8';
/** A status request is `{"data":{"taskId":"<uuid>"}}`; a larger body goes to Fastify (and its body limit). */
export const LANE_MAX_BODY = 4096;

export interface StatusLaneDeps {
  engine: UpscalingEngine;
  keys: KeyAuthenticator;
  rateLimit: RateLimit;
  answers: StatusAnswers;
  log: FastifyBaseLogger;
  bodyLimit: number;
  /** True once the server has begun to close: Fastify answers 503 then, so the lane steps aside. */
  closing(): boolean;
}

/** Answers `req` if it is a plain status poll (true), or leaves it untouched for Fastify (false). */
export type StatusLane = (req: IncomingMessage, res: ServerResponse) => boolean;

export function createStatusLane(deps: StatusLaneDeps): StatusLane {
  const local = deps.rateLimit.local;
  let served = 0;
  return (req, res) => {
    if (req.method !== 'POST' || req.url !== ROUTE || !local || !deps.answers.ready || deps.closing()) return false;
    const h = req.headers;
    const type = h['content-type'];
    if (type !== 'application/json' && type?.toLowerCase() !== JSON_TYPE) return false;
    if (h['transfer-encoding'] !== undefined || h.expect !== undefined) return false;
    const length = Number(h['content-length']);
    if (!(length >= 1 && length <= LANE_MAX_BODY)) return false;
    const digest = digestOfKey(apiKeyFrom(h));
    const caller = digest ? deps.keys.cached(digest) : undefined;
    if (!caller) return false;

    // From here on the lane owns the request.
    const started = performance.now();
    // The id's string is made only for a request that is logged (most polls are not, at the default level).
    const seq = served++;
    const headers: OutgoingHttpHeaders = {};
    const finish = (status: number, body: Buffer | string, refusal: LoggedRefusal | null) => {
      headers['content-type'] = JSON_TYPE;
      headers['content-length'] = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
      res.writeHead(status, headers).end(body);
      if (!lineWanted(deps.log, status, 'get-task-status')) return;
      writeRequestLine(deps.log, {
        reqId: `req-s${seq.toString(36)}`,
        method: 'POST',
        route: ROUTE,
        status,
        ms: performance.now() - started,
        endpoint: 'get-task-status',
        user: caller.userId,
        refusal,
      });
    };
    const fail = (e: unknown) => {
      const { answer, refusal } = mapError(e, 'get-task-status', deps.bodyLimit);
      finish(answer.status, JSON.stringify(answer.message), refusal);
    };

    const over = deps.rateLimit.decide((name, value) => (headers[name] = value), local.hit(rateKeyOf(digest, '')));
    // Refused before the body is read, as the route's hooks do; Node discards the unread body.
    if (over) {
      fail(over);
      return true;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      let body: unknown;
      try {
        body = parseJsonBody(text);
      } catch (e) {
        return fail(e);
      }
      // One continuation, not two: the answer is written in the tick the engine's status arrives.
      deps.engine.getTaskStatus(caller, body).then((data) => {
        let bytes: Buffer;
        try {
          bytes = deps.answers.bodyOf(data);
        } catch (e) {
          return fail(e);
        }
        finish(200, bytes, null);
      }, fail);
    });
    return true;
  };
}
