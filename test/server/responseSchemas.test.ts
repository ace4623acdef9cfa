/**
 * The server serialises its 200 answers from the contract's schemas: every answer parses with them,
 * and a field the contract does not declare never leaves the server, even if the engine adds one.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskStatusData } from '../../engine/contract/index.js';
import { successBodySchema, taskStatusDataSchema, uploadSessionSchema } from '../../engine/contract/schemas.js';
import {
  addUser,
  BASIC,
  dataOf,
  pollStatus,
  postForm,
  postJson,
  SET5,
  startTestServer,
  taskForm,
  type TestServer,
} from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(
    {},
    {
      engine: (engine) => ({
        ...engine,
        getTaskStatus: async (caller, body) =>
          ({ ...(await engine.getTaskStatus(caller, body)), internalPath: '/srv/crisp/secret' }) as TaskStatusData,
      }),
    },
  );
});
afterAll(async () => s?.stop());

describe('answers follow the contract schemas', () => {
  it('get-task-status carries every contract field and nothing else; get-upload-url parses', async () => {
    const { key } = await addUser(s, 'schema@example.com', 5);
    const bytes = await readFile(path.join(SET5, 'bird.png'));
    const { taskId } = dataOf<{ taskId: string }>(
      await postForm(s.url, key, taskForm(BASIC, [{ name: 'file', fileName: 'bird.png', bytes }])),
    );
    await pollStatus(s.url, key, taskId);
    const r = await postJson(s.url, '/get-task-status', key, { data: { taskId } });
    expect(r.status).toBe(200);
    expect(r.text).not.toContain('internalPath');
    expect(successBodySchema(taskStatusDataSchema.strict()).safeParse(r.json).success).toBe(true);
    const up = await postJson(s.url, '/get-upload-url', key, {
      data: { fileSize: 12345, fileType: 'image/png', originalFileName: 'a.png' },
    });
    expect(successBodySchema(uploadSessionSchema.strict()).parse(up.json).data.fileSize).toBe(12345);
  });
});
