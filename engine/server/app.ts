/**
 * The Fastify application: a thin HTTP transport over an UpscalingEngine. Composition only: plugins
 * (multipart), the rate limit, error mapping, auth, and the routes; it opens no files and starts nothing.
 */
import fastifyMultipart from '@fastify/multipart';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AccountStore } from '../service/accounts/accountStore.js';
import type { UpscalingEngine } from '../service/api.js';
import type { CreditMeter } from '../service/credits/meter.js';
import type { EngineLimits } from '../service/limits.js';
import { createBoundedServer } from './connectionLimits.js';
import type { DownloadLinks } from './downloadLinks.js';
import { clientErrorHandler, frameworkErrorsHandler, installErrorMapping, MAX_PARAM_LENGTH } from './errorMapping.js';
import { installJsonBodyParsers } from './jsonBody.js';
import { installRequestLog, loggerOptions, requestLogOptions, type LogFormat } from './logging.js';
import type { ServerLimits } from './options.js';
import type { SharedRateStore } from '../service/db/pgRateLimitStore.js';
import { installRateLimit } from './rateLimit.js';
import { StatusAnswers } from './routes/statusAnswers.js';
import { createStatusLane, type StatusLane } from './statusLane.js';
import { cachedAuthenticate } from './auth.js';
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
  rateLimitStore?: SharedRateStore;
  /** Operator endpoints (/healthz, /readyz, /metrics); absent in tests that build the app alone. */
  health?: ServerHealth;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { serverLimits: sl, engineLimits: el } = deps;
  // Set below, once the app exists; no request arrives before listen.
  let lane: StatusLane = () => false;
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
    // Plain status polls take the status lane beside Fastify (statusLane.ts); everything else, Fastify.
    serverFactory: (handler) => createBoundedServer((req, res) => lane(req, res) || handler(req, res), sl),
  });
  app.decorateRequest('caller', null);
  app.decorateRequest('keyDigest', null);
  installErrorMapping(app, sl.bodyLimit);
  installJsonBodyParsers(app, sl.bodyLimit);
  installRequestLog(app);

  const rateLimit = installRateLimit(app, {
    max: sl.rateLimitMax,
    windowMs: sl.rateLimitWindowMs,
    ...(deps.rateLimitStore ? { shared: deps.rateLimitStore } : {}),
  });
  await app.register(fastifyMultipart, {
    limits: { fileSize: el.maxFileSize, files: el.maxFilesPerTask + 100, fieldSize: sl.bodyLimit, fields: 32 },
  });

  const keys = cachedAuthenticate(deps.accounts);
  const statusAnswers = new StatusAnswers();
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  lane = createStatusLane({
    engine: deps.engine,
    keys,
    rateLimit,
    answers: statusAnswers,
    log: app.log,
    bodyLimit: sl.bodyLimit,
    closing: () => closing,
  });
  registerContractRoutes(app, {
    engine: deps.engine,
    keys,
    statusAnswers,
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
