/**
 * The Fastify application: a thin HTTP transport over an UpscalingEngine. Composition only: plugins
 * (multipart, rate limit), error mapping, auth, and the routes; it opens no files and starts nothing.
 */
import fastifyMultipart from '@fastify/multipart';
import fastifyRateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AccountStore } from '../service/accounts/accountStore.js';
import type { UpscalingEngine } from '../service/api.js';
import { errors } from '../contract/index.js';
import type { CreditMeter } from '../service/credits/meter.js';
import type { EngineLimits } from '../service/limits.js';
import { keyDigestOf } from './auth.js';
import { createBoundedServer } from './connectionLimits.js';
import type { DownloadLinks } from './downloadLinks.js';
import { clientErrorHandler, frameworkErrorsHandler, installErrorMapping, MAX_PARAM_LENGTH } from './errorMapping.js';
import { installJsonBodyParsers } from './jsonBody.js';
import { installRequestLog, loggerOptions, requestLogOptions, type LogFormat } from './logging.js';
import type { ServerLimits } from './options.js';
import { registerContractRoutes } from './routes/contract.js';
import { registerDownloadRoutes } from './routes/downloads.js';
import { registerHealthRoutes, type ServerHealth } from './routes/health.js';
import { registerPartRoutes } from './routes/parts.js';

export interface AppDeps {
  engine: UpscalingEngine;
  accounts: AccountStore;
  meter: CreditMeter;
  links: DownloadLinks;
  engineLimits: Pick<EngineLimits, 'maxFileSize' | 'maxFilesPerTask'>;
  serverLimits: ServerLimits;
  logLevel?: string;
  logFormat?: LogFormat;
  logStream?: NodeJS.WritableStream;
  /** Where start-task file parts stream to (under the data directory). */
  incomingDir: string;
  /** Where rate-limit counters live when several processes must share them (`--db`); default: in memory. */
  rateLimitStore?: FastifyRateLimitStoreCtor;
  /** Operator endpoints (/healthz, /readyz, /metrics); absent in tests that build the app alone. */
  health?: ServerHealth;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { serverLimits: sl, engineLimits: el } = deps;
  const app = Fastify({
    logger: loggerOptions(deps.logLevel ?? 'info', deps.logFormat, deps.logStream),
    ...requestLogOptions(),
    bodyLimit: sl.bodyLimit,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Every signed download link routes: output names are bounded to fit (tasks/outputNames.ts). Given as a
    // router option: the top-level spelling prints Fastify's deprecation warning FSTDEP022 at every start.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrorsHandler,
    clientErrorHandler,
    serverFactory: (handler) => createBoundedServer(handler, sl),
  });
  app.decorateRequest('caller', null);
  app.decorateRequest('keyDigest', null);
  installErrorMapping(app, sl.bodyLimit);
  installJsonBodyParsers(app, sl.bodyLimit);
  installRequestLog(app);

  await app.register(fastifyRateLimit, {
    global: true,
    max: sl.rateLimitMax,
    timeWindow: sl.rateLimitWindowMs,
    hook: 'onRequest',
    // A shared store that cannot be reached must not turn every request into a 500: authentication
    // needs the same database and answers for itself.
    ...(deps.rateLimitStore ? { store: deps.rateLimitStore, skipOnError: true } : {}),
    // Per key, not per IP: many users may share a NAT. The key is hashed so the limiter's memory never
    // holds credentials. Requests without a key (part URLs, downloads) are limited per IP.
    keyGenerator: (request) => {
      const digest = keyDigestOf(request);
      return digest ? `k:${digest}` : `ip:${request.ip}`;
    },
    errorResponseBuilder: () => Object.assign(errors.rateLimited(), { statusCode: 429 }),
  });
  await app.register(fastifyMultipart, {
    limits: { fileSize: el.maxFileSize, files: el.maxFilesPerTask + 100, fieldSize: sl.bodyLimit, fields: 32 },
  });

  registerContractRoutes(app, {
    engine: deps.engine,
    accounts: deps.accounts,
    meter: deps.meter,
    form: {
      maxFileSize: el.maxFileSize,
      maxFilesPerTask: el.maxFilesPerTask,
      maxFieldBytes: sl.bodyLimit,
      maxRequestBytes: sl.maxRequestBytes,
    },
    incomingDir: deps.incomingDir,
  });
  registerPartRoutes(app, deps.engine);
  registerDownloadRoutes(app, deps.engine, deps.accounts, deps.links);
  if (deps.health) registerHealthRoutes(app, deps.health);
  return app;
}
