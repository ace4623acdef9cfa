/**
 * Turns anything thrown while handling a request into the contract's error shape: a JSON string body
 * with the spec's status. Catalogued refusals (ContractError: a CrispError whose row has a status) pass through
 * unchanged; framework errors (bad JSON, body too
 * large, multipart limits, router and HTTP parser errors) become specific 4xx messages; everything else is logged with its stack and
 * answered with the endpoint's spec 500 message, so no stack or internal detail reaches a client.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { errors, isContractError, type ContractError, type Endpoint } from '../contract/index.js';
import { MAX_OUTPUT_NAME_BYTES } from '../service/tasks/outputNames.js';
import type { LoggedRefusal } from './logging.js';
import { START_TASK_TYPES } from './startTaskForm.js';

/**
 * The router's limit on one path segment (Fastify's maxParamLength, 100 by default): the longest output
 * name, percent-encoded (up to 3 characters a byte), plus room for a numbered duplicate's suffix.
 */
export const MAX_PARAM_LENGTH = 3 * (MAX_OUTPUT_NAME_BYTES + 16);

export interface RouteConfig {
  /** The spec endpoint a route implements; picks its 400/500 wording. */
  endpoint?: Endpoint;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    endpoint?: Endpoint;
  }
}

export function sendError(reply: FastifyReply, e: ContractError): FastifyReply {
  return reply.code(e.status).type('application/json; charset=utf-8').send(JSON.stringify(e.message));
}

function endpointOf(request: FastifyRequest): Endpoint | undefined {
  return (request.routeOptions.config as RouteConfig | undefined)?.endpoint;
}

/** Maps framework and plugin errors by their code; undefined means "unexpected". */
function frameworkError(e: FastifyError, bodyLimit: number, endpoint: Endpoint | undefined): ContractError | undefined {
  switch (e.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.badRequest('the body is empty; send a JSON object {"data": {…}}');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.badRequest('the body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(`the request body exceeds the limit of ${bodyLimit} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.badRequest(
        endpoint === 'start-task' ? START_TASK_TYPES : 'unsupported Content-Type: send application/json',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('the body is not as long as its Content-Length says');
    case 'FST_ERR_BAD_URL':
      return errors.badRequest('the URL is malformed (a bad percent-encoding)');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errors.uriTooLong(`a segment of the URL is longer than ${MAX_PARAM_LENGTH} characters`);
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return errors.badRequest(START_TASK_TYPES);
    case 'FST_REQ_FILE_TOO_LARGE':
      return errors.payloadTooLarge('a file part exceeds the file size limit');
    case 'FST_FILES_LIMIT':
      return errors.badRequest('too many files in one task');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return errors.badRequest('too many form fields');
    case 'FST_PROTO_VIOLATION':
      return errors.badRequest('forbidden field name in the form');
    default:
      break;
  }
  if (e instanceof SyntaxError) return errors.badRequest('the body is not valid JSON');
  return undefined;
}

/**
 * Router errors that happen before a route is found (Fastify's `frameworkErrors` option): a malformed
 * percent-encoding or an over-long path segment, answered in the contract's shape like every other error.
 */
export function frameworkErrorsHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const mapped = frameworkError(error, 0, undefined) ?? errors.badRequest('the request cannot be routed');
  request.refusal = { status: mapped.status, code: mapped.code, message: mapped.message };
  void sendError(reply, mapped);
}

/**
 * Errors of the HTTP parser itself (Fastify's `clientErrorHandler`), before any request exists: malformed
 * HTTP, headers too large, a request timeout. Answered in the contract's shape, then the socket closes.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const mapped =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? errors.requestTimeout('the request did not arrive in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? errors.headersTooLarge()
        : errors.badRequest('the request is not valid HTTP/1.1');
  if (socket.writable) {
    const body = JSON.stringify(mapped.message);
    socket.write(
      `HTTP/1.1 ${mapped.status} ${STATUS_CODES[mapped.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * What a thrown value is answered with, and what the request's log line says of it: a catalogued refusal or a
 * framework error as itself, anything else as the endpoint's spec 500 (its stack only in the log).
 */
export function mapError(
  error: unknown,
  endpoint: Endpoint | undefined,
  bodyLimit: number,
): { answer: ContractError; refusal: LoggedRefusal } {
  let mapped: ContractError | undefined = isContractError(error) ? error : undefined;
  if (!mapped && error && typeof error === 'object') {
    const fe = error as FastifyError;
    mapped = frameworkError(fe, bodyLimit, endpoint);
    if (!mapped && fe.statusCode === 429) mapped = errors.rateLimited();
  }
  // Expected refusals: the request's one log line (logging.ts) names them, no stack; a 5xx one (an outage the
  // client is told about in the catalog's words) keeps the error for the operator's line.
  if (mapped)
    return {
      answer: mapped,
      refusal: {
        status: mapped.status,
        code: mapped.code,
        message: mapped.message,
        ...(mapped.status >= 500 ? { err: error } : {}),
      },
    };
  const failure = endpoint ? errors.serverFailure(endpoint) : errors.internal();
  return {
    answer: failure,
    refusal: { status: failure.status, code: failure.code, message: 'request failed', err: error },
  };
}

export function installErrorMapping(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((error: unknown, request, reply) => {
    const { answer, refusal } = mapError(error, endpointOf(request), bodyLimit);
    request.refusal = refusal;
    return sendError(reply, answer);
  });
  app.setNotFoundHandler((_request, reply) => sendError(reply, errors.notFound('Not Found')));
}
