/**
 * The spec's four POST endpoints plus the get-account extension. Each handler authenticates (hook),
 * hands the raw body to the engine (which validates it with engine/contract) and wraps the result in
 * the success envelope.
 */
import type { FastifyInstance } from 'fastify';
import type { AccountStore } from '../../accounts/accountStore.js';
import type { UpscalingEngine } from '../../api.js';
import { success } from '../../contract/index.js';
import type { CreditMeter } from '../../credits/meter.js';
import { callerOf, requireApiKey } from '../auth.js';
import type { RouteConfig } from '../errorMapping.js';
import { readStartTaskForm, type FormLimits } from '../startTaskForm.js';
import { RESPONSE_SCHEMAS } from './responseSchemas.js';

export interface ContractRouteDeps {
  engine: UpscalingEngine;
  accounts: AccountStore;
  meter: CreditMeter;
  form: FormLimits;
}

export function registerContractRoutes(app: FastifyInstance, deps: ContractRouteDeps): void {
  const auth = requireApiKey(deps.accounts);
  const cfg = (endpoint: RouteConfig['endpoint'], response: (typeof RESPONSE_SCHEMAS)[keyof typeof RESPONSE_SCHEMAS]) => ({
    config: { endpoint } satisfies RouteConfig,
    onRequest: auth,
    ...response,
  });

  app.post('/get-upload-url', cfg('get-upload-url', RESPONSE_SCHEMAS.getUploadUrl), async (request) => success(await deps.engine.getUploadUrl(callerOf(request), request.body)));

  app.post('/complete-multipart-upload', cfg('complete-multipart-upload', RESPONSE_SCHEMAS.completeMultipartUpload), async (request) =>
    success(await deps.engine.completeMultipartUpload(callerOf(request), request.body)),
  );

  app.post('/start-task', cfg('start-task', RESPONSE_SCHEMAS.startTask), async (request, reply) => {
    const input = await readStartTaskForm(request, deps.form);
    const result = await deps.engine.startTask(callerOf(request), input);
    reply.header('x-task-cost', String(result.creditsToDeduct));
    return success(result);
  });

  app.post('/get-task-status', cfg('get-task-status', RESPONSE_SCHEMAS.getTaskStatus), async (request) => success(await deps.engine.getTaskStatus(callerOf(request), request.body)));

  // extension: the caller's identity and balances (body optional).
  app.post('/get-account', cfg(undefined, RESPONSE_SCHEMAS.getAccount), async (request) => {
    const caller = callerOf(request);
    const b = await deps.meter.balance(caller);
    return success({ userId: caller.userId, email: caller.email, currentCredits: b.currentCredits, currentExtraCredits: b.currentExtraCredits });
  });
}
