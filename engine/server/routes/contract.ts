/**
 * The spec's four POST endpoints plus the get-account extension. Each handler authenticates (hook),
 * hands the raw body to the engine (which validates it with engine/contract) and wraps the result in
 * the success envelope.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, RouteShorthandOptions } from 'fastify';
import type { UpscalingEngine } from '../../service/api.js';
import { errors, success, type Scale } from '../../contract/index.js';
import type { CreditMeter } from '../../service/credits/meter.js';
import { callerOf, requireApiKey, type KeyAuthenticator } from '../auth.js';
import type { RouteConfig } from '../errorMapping.js';
import { lingerOnClose } from '../lingeringClose.js';
import {
  parseUrlEncodedForm,
  readStartTaskForm,
  URL_ENCODED,
  type FormGate,
  type FormLimits,
} from '../startTaskForm.js';
import { RESPONSE_SCHEMAS } from './responseSchemas.js';
import type { StatusAnswers } from './statusAnswers.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export interface ContractRouteDeps {
  engine: UpscalingEngine;
  /** Known keys (shared with the status lane, statusLane.ts). */
  keys: KeyAuthenticator;
  /** get-task-status answers (shared with the status lane). */
  statusAnswers: StatusAnswers;
  meter: CreditMeter;
  form: FormLimits;
  /** Where start-task file parts stream to (one folder per request, on the data directory's disk). */
  incomingDir: string;
}

/** The cheapest settings the fields received so far allow: the gate must never over-refuse. */
function gateSettings(fields: Readonly<Record<string, string>>): { scale: Scale; enhanceFace: boolean } {
  const scale = Number(fields.scale);
  return {
    scale: (Number.isInteger(scale) && scale >= 1 && scale <= 8 ? scale : 1) as Scale,
    enhanceFace: fields.enhanceFace === 'true',
  };
}

export function registerContractRoutes(app: FastifyInstance, deps: ContractRouteDeps): void {
  const auth = requireApiKey(deps.keys);
  const cfg = (
    endpoint: RouteConfig['endpoint'],
    response: (typeof RESPONSE_SCHEMAS)[keyof typeof RESPONSE_SCHEMAS],
  ) => ({
    config: { endpoint } satisfies RouteConfig,
    onRequest: auth,
    ...response,
  });

  app.post('/get-upload-url', cfg('get-upload-url', RESPONSE_SCHEMAS.getUploadUrl), async (request) =>
    success(await deps.engine.getUploadUrl(callerOf(request), request.body)),
  );

  app.post(
    '/complete-multipart-upload',
    cfg('complete-multipart-upload', RESPONSE_SCHEMAS.completeMultipartUpload),
    async (request) => success(await deps.engine.completeMultipartUpload(callerOf(request), request.body)),
  );

  // start-task in its own scope: only it also takes the url-encoded form (startTaskForm.ts).
  void app.register(async (scope) => startTaskRoute(scope, deps, cfg('start-task', RESPONSE_SCHEMAS.startTask)));

  // The hot path: clients poll it in a loop; its answers are serialised once per task state (statusAnswers.ts).
  // Plain polls mostly take the status lane (statusLane.ts) instead, with the same answers.
  app.post('/get-task-status', cfg('get-task-status', RESPONSE_SCHEMAS.getTaskStatus), async (request, reply) => {
    const data = await deps.engine.getTaskStatus(callerOf(request), request.body);
    deps.statusAnswers.learn(reply);
    reply.type(JSON_TYPE);
    return deps.statusAnswers.bodyOf(data);
  });

  // extension: what this server offers, so a client can grey out what it would refuse (body optional).
  // The model list lets a client offer only what this server can run, instead of a 400 after upload.
  app.post('/get-capabilities', cfg(undefined, RESPONSE_SCHEMAS.getCapabilities), async () =>
    success({ faceEnhancement: deps.engine.faceEnhancement, models: await deps.engine.installedModels() }),
  );

  // extension: the caller's identity and balances (body optional).
  app.post('/get-account', cfg(undefined, RESPONSE_SCHEMAS.getAccount), async (request) => {
    const caller = callerOf(request);
    const b = await deps.meter.balance(caller);
    return success({
      userId: caller.userId,
      email: caller.email,
      currentCredits: b.currentCredits,
      currentExtraCredits: b.currentExtraCredits,
    });
  });
}

function startTaskRoute(app: FastifyInstance, deps: ContractRouteDeps, options: RouteShorthandOptions): void {
  app.addContentTypeParser(
    URL_ENCODED,
    { parseAs: 'string', bodyLimit: deps.form.maxFieldBytes },
    (_req, body, done) => {
      try {
        done(null, parseUrlEncodedForm(body as string));
      } catch (e) {
        done(e as Error, undefined);
      }
    },
  );
  app.post('/start-task', options, async (request, reply) => {
    const caller = callerOf(request);
    const declared = Number(request.headers['content-length']);
    const incoming = path.join(deps.incomingDir, randomUUID());
    try {
      // A body announced larger than the cap is refused before one byte of it is read.
      if (declared > deps.form.maxRequestBytes + deps.form.maxFieldBytes * 2) {
        throw errors.payloadTooLarge(
          `the request body is ${declared} bytes; the limit is ${deps.form.maxRequestBytes} bytes of files`,
        );
      }
      const gate: FormGate = {
        beforeFile: (count, fields) =>
          deps.meter.assertCanAfford(caller, deps.meter.quote(gateSettings(fields), count)),
      };
      // A client that gives up (closes the connection before the answer is out) must not leave a reservation:
      // the engine saves nothing for a request whose answer nobody will read (StartTaskInput.signal).
      const gone = new AbortController();
      const closed = () => {
        if (!reply.raw.writableFinished) gone.abort();
      };
      reply.raw.once('close', closed);
      const input = await readStartTaskForm(request, deps.form, incoming, gate);
      const result = await deps.engine.startTask(caller, { ...input, signal: gone.signal });
      reply.header('x-task-cost', String(result.creditsToDeduct));
      return success(result);
    } catch (e) {
      // Refused before the body was read to its end: close the connection after the answer rather than
      // receive (and discard) the rest of a possibly huge body.
      if (!request.raw.complete) {
        reply.header('connection', 'close');
        lingerOnClose(request.raw.socket);
      }
      throw e;
    } finally {
      await rm(incoming, { recursive: true, force: true });
    }
  });
}
