/**
 * PUT of a presigned part URL. The URL's signature is the credential (no X-API-Key, like S3), so the
 * engine verifies it before storing anything. The body is streamed to the engine unparsed; the engine
 * stops reading as soon as a part exceeds its expected size.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { UpscalingEngine } from '../../service/api.js';
import { errors, success } from '../../contract/index.js';
import { lingerOnClose } from '../lingeringClose.js';
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
      // The body may be failed (below, or by a newer upload of the same part) before its reader is
      // attached; the reader still sees the error, and this listener keeps it from being "unhandled".
      body.on('error', () => undefined);
      raw.pipe(body);
      // pipe() does not end the PassThrough when the client goes away mid-part: fail it, or the part's
      // writer (and its retry, which waits for it) would wait for bytes that never come.
      const onClose = () => {
        if (!raw.complete) body.destroy(errors.badRequest('the connection closed before the part was complete'));
      };
      raw.once('close', onClose);
      try {
        const stored = await engine.putUploadPart(request.url, body);
        reply.header('ETag', stored.etag);
        return success({ ETag: stored.etag, size: stored.size });
      } catch (e) {
        raw.unpipe(body);
        if (!raw.complete) {
          // Refused before the body's end (a bad signature, an expired URL, a part too big): the answer goes out,
          // then the connection closes — after a bounded lingering close that discards what is still arriving, so
          // the client reads the answer instead of a reset. Discarding on a kept-alive connection would let a
          // client that keeps sending hold the socket (and its slot) as long as it likes.
          reply.header('connection', 'close');
          lingerOnClose(raw.socket);
          raw.resume();
        }
        throw e;
      } finally {
        raw.off('close', onClose);
      }
    });
  });
}
