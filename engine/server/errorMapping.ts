/**
 * Turns anything thrown while handling a request into the contract's error shape: a JSON string body
 * with the spec's status. ContractErrors pass through unchanged; framework errors (bad JSON, body too
 * large, multipart limits) become specific 4xx messages; everything else is logged with its stack and
 * answered with the endpoint's spec 500 message, so no stack or internal detail reaches a client.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ContractError, errors, isContractError, type Endpoint } from '../contract/index.js';

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
function frameworkError(e: FastifyError, bodyLimit: number): ContractError | undefined {
  switch (e.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.badRequest('the body is empty; send a JSON object {"data": {…}}');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.badRequest('the body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(`the request body exceeds the limit of ${bodyLimit} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('unsupported Content-Type: send application/json (start-task: multipart/form-data)');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return errors.badRequest('start-task takes multipart/form-data');
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

export function installErrorMapping(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((error: unknown, request, reply) => {
    const endpoint = endpointOf(request);
    let mapped: ContractError | undefined = isContractError(error) ? error : undefined;
    if (!mapped && error && typeof error === 'object') {
      const fe = error as FastifyError;
      mapped = frameworkError(fe, bodyLimit);
      if (!mapped && fe.statusCode === 429) mapped = errors.rateLimited();
    }
    if (mapped) {
      // Expected refusals: the request's one log line (logging.ts) names them, no stack.
      request.refusal = { status: mapped.status, code: mapped.code, message: mapped.message };
      return sendError(reply, mapped);
    }
    const failure = endpoint ? errors.serverFailure(endpoint) : errors.internal();
    request.refusal = { status: failure.status, code: failure.code, message: 'request failed', err: error };
    return sendError(reply, failure);
  });
  app.setNotFoundHandler((_request, reply) => sendError(reply, errors.notFound('Not Found')));
}
