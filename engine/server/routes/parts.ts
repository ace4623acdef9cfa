/**
 * PUT of a presigned part URL. The URL's signature is the credential (no X-API-Key, like S3), so the
 * engine verifies it before storing anything. The body is streamed to the engine unparsed; the engine
 * stops reading as soon as a part exceeds its expected size.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { UpscalingEngine } from '../../api.js';
import { success } from '../../contract/index.js';
import { RESPONSE_SCHEMAS } from './responseSchemas.js';

export function registerPartRoutes(app: FastifyInstance, engine: UpscalingEngine): void {
  // Encapsulated so the "don't parse, just stream" content-type rule applies to this route only.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    scope.put('/uploads/:uploadId/parts/:partNumber', RESPONSE_SCHEMAS.putPart, async (request, reply) => {
      const raw = request.raw;
      // The engine destroys its input when it refuses a part midway; handing it a pipe (not the request
      // itself) keeps the socket alive so the client still receives the 400 instead of a reset.
      const body = new PassThrough();
      raw.pipe(body);
      try {
        const stored = await engine.putUploadPart(request.url, body);
        reply.header('ETag', stored.etag);
        return success({ ETag: stored.etag, size: stored.size });
      } catch (e) {
        raw.unpipe(body);
        // Discard the rest of the refused body so the answer can be read on this connection.
        if (!raw.complete) raw.resume();
        throw e;
      }
    });
  });
}
