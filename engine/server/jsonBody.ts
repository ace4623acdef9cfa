/**
 * The body parsers of the JSON endpoints, in place of Fastify's defaults so each refusal names its real
 * reason in the contract's shape: an empty body, a body that is not JSON, and a body holding a key that
 * could poison an object's prototype when merged (`__proto__`, `constructor.prototype`) — refused as what
 * it is, not as "not valid JSON". text/plain (what a browser's fetch sends for a bare string) is refused
 * with the type to send instead of being handed on as a string.
 */
import type { FastifyInstance } from 'fastify';
import { errors } from '../contract/index.js';

const FORBIDDEN_KEY = 'the body holds a forbidden key (__proto__ or constructor.prototype)';

export function parseJsonBody(body: string): unknown {
  if (body.length === 0) throw errors.badRequest('the body is empty; send a JSON object {"data": {…}}');
  // The reviver below makes JSON.parse several times slower, and every status poll comes through here. A
  // key can only be one of the forbidden names if the text spells it: literally, or through a \u escape
  // (the only escape that yields a letter). A body without either cannot hold one (secure-json-parse's rule).
  if (!body.includes('__proto__') && !body.includes('constructor') && !body.includes('\\u')) {
    try {
      return JSON.parse(body);
    } catch {
      throw errors.badRequest('the body is not valid JSON');
    }
  }
  let forbidden = false;
  let value: unknown;
  try {
    // JSON.parse defines `__proto__` as a plain own key (no poisoning here); it is refused because code
    // that later merges the object would not be as careful.
    value = JSON.parse(body, (key, v: unknown) => {
      if (key === '__proto__' || (key === 'constructor' && typeof v === 'object' && v !== null && 'prototype' in v))
        forbidden = true;
      return v;
    });
  } catch {
    throw errors.badRequest('the body is not valid JSON');
  }
  if (forbidden) throw errors.badRequest(FORBIDDEN_KEY);
  return value;
}

export function installJsonBodyParsers(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
  app.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit }, (_req, _body, done) => {
    // Refused like any other unsupported type: the error mapping words it per endpoint.
    done(Object.assign(new Error('unsupported Content-Type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' }), undefined);
  });
}
