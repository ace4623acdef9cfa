/**
 * Fastify response schemas of the contract routes, generated from the contract's zod objects
 * (engine/contract/schemas.ts) — never written twice. Fastify compiles them into fast serialisers, and
 * a field that is not in the contract never leaves the server by accident.
 */
import { z } from 'zod';
import {
  accountDataSchema,
  capabilitiesSchema,
  completeMultipartUploadResultSchema,
  startTaskResultSchema,
  storedPartSchema,
  successBodySchema,
  taskStatusDataSchema,
  uploadSessionSchema,
} from '../../contract/schemas.js';

function jsonSchema(data: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(successBodySchema(data), {
    target: 'draft-7',
    io: 'output',
  }) as Record<string, unknown>;
  return schema;
}

/** `schema` options per route: only the 200 answer is described; errors go through errorMapping. */
const ok = (data: z.ZodType) => ({ schema: { response: { 200: jsonSchema(data) } } });

export const RESPONSE_SCHEMAS = {
  getUploadUrl: ok(uploadSessionSchema),
  completeMultipartUpload: ok(completeMultipartUploadResultSchema),
  startTask: ok(startTaskResultSchema),
  getTaskStatus: ok(taskStatusDataSchema),
  getAccount: ok(accountDataSchema),
  getCapabilities: ok(capabilitiesSchema),
  putPart: ok(storedPartSchema),
} as const;
