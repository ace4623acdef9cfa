/**
 * get-capabilities (extension) lists the models this server runs: exactly the installed ones, read per
 * request so a model installed while the server runs is offered at once; and the app's remote backend
 * reads that list.
 */
import { symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { ONNX_DIR } from '../helpers/paths.js';
import { addUser, postJson, startTestServer, tempDir, type TestServer } from './helpers.js';

describe('get-capabilities: the installed model list', () => {
  let server: TestServer;
  let models: string;
  beforeAll(async () => {
    models = await tempDir('crisp-caps-models-');
    symlinkSync(path.join(ONNX_DIR, 'realesr-animevideov3.onnx'), path.join(models, 'realesr-animevideov3.onnx'));
    server = await startTestServer({ modelDirs: [models] });
  });
  afterAll(async () => server.stop());

  it('answers exactly the installed models, and follows an install without a restart', async () => {
    const { key } = await addUser(server, 'caps@example.com', 5);
    const first = await postJson(server.url, '/get-capabilities', key, {});
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ status: 'success', data: { faceEnhancement: false, models: ['digital-art-4x'] } });

    symlinkSync(path.join(ONNX_DIR, '4xLSDIRCompactC3.onnx'), path.join(models, '4xLSDIRCompactC3.onnx'));
    const backend = createRemoteBackend({ baseUrl: server.url, apiKey: key });
    expect(await backend.offeredModels?.()).toEqual(['crystal-plus-4x', 'digital-art-4x']);
  });

  it('needs the API key like every contract route', async () => {
    const r = await postJson(server.url, '/get-capabilities', 'not-a-key', {});
    expect(r.status).toBe(401);
  });

  it('the remote backend says null (offer everything) when the service has no such extension', async () => {
    const backend = createRemoteBackend({ baseUrl: `${server.url}/nowhere`, apiKey: 'x' });
    expect(await backend.offeredModels?.()).toBeNull();
  });
});
