/**
 * `crisp serve` and faces: without --face-model, enhanceFace is the catalog's 400 and costs nothing; with it,
 * faces are enhanced and the surcharge is exactly +1 credit per image on top of the plain price.
 */
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errors } from '../../engine/contract/index.js';
import { priceOf, DEFAULT_PRICE_TABLE } from '../../engine/service/credits/priceTable.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import {
  BASIC,
  addUser,
  dataOf,
  pollStatus,
  postForm,
  postJson,
  startTestServer,
  taskForm,
  tempDir,
  type TestServer,
} from '../server/helpers.js';
import { constantFaceModel, writeModel } from './support/faceModels.js';
import { createRemoteBackend } from '../../app/remote/remoteBackend.js';

const WOMAN = readFileSync(path.join(IMAGES_DIR, 'set5-x2', 'lr', 'woman_LRBI_x2.png'));
const file = (fileName: string) => ({ name: 'file', fileName, bytes: WOMAN });

async function credits(base: string, key: string): Promise<number> {
  return dataOf<{ currentCredits: number }>(await postJson(base, '/get-account', key, {})).currentCredits;
}

describe('crisp serve without --face-model', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => server.stop());

  it('answers enhanceFace with the 400 from the contract catalog and charges nothing', async () => {
    const { key } = await addUser(server, 'noface@example.com', 50);
    const r = await postForm(server.url, key, taskForm({ ...BASIC, enhanceFace: 'true' }, [file('a.png')]));
    expect(r.status).toBe(400);
    expect(r.json).toBe('Bad Request: face enhancement is not available on this server');
    expect(r.json).toBe(errors.faceNotAvailable().message);
    expect(await credits(server.url, key)).toBe(50);
  });

  it('says so in get-capabilities', async () => {
    const { key } = await addUser(server, 'caps@example.com', 5);
    const r = await postJson(server.url, '/get-capabilities', key, {});
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      status: 'success',
      data: {
        faceEnhancement: false,
        models: ['service-lite-4x', 'clear-boost-4x', 'crystal-plus-4x', 'digital-art-4x'],
      },
    });
  });
});

describe('crisp serve --face-model', () => {
  let server: TestServer;
  beforeAll(async () => {
    const models = path.join(await tempDir('crisp-face-models-'), 'models');
    mkdirSync(path.join(models, 'face'), { recursive: true });
    symlinkSync(
      path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx'),
      path.join(models, 'face', 'yunet_s_dynamic.onnx'),
    );
    writeModel(path.join(models, 'face'), 'custom-red.onnx', constantFaceModel([1, -1, -1]));
    server = await startTestServer({ modelDirs: [ONNX_DIR, models], face: { model: 'custom:red' } });
  });
  afterAll(async () => server.stop());

  it('enhances faces and charges exactly +1 credit per image over the plain price', async () => {
    const { key } = await addUser(server, 'face@example.com', 50);
    const plain = priceOf(DEFAULT_PRICE_TABLE, { scale: 2, enhanceFace: false }, 2);
    const r = await postForm(
      server.url,
      key,
      taskForm({ ...BASIC, enhanceFace: 'true' }, [file('a.png'), file('b.png')]),
    );
    expect(r.status).toBe(200);
    const { taskId, creditsToDeduct } = dataOf<{ taskId: string; creditsToDeduct: number }>(r);
    expect(creditsToDeduct).toBe(plain + 2);
    const s = await pollStatus(server.url, key, taskId);
    expect(s.status).toBe('PROCESSED');
    expect(s.files.map((f) => (f as { faces?: unknown }).faces)).toEqual([
      { found: 1, enhanced: 1 },
      { found: 1, enhanced: 1 },
    ]);
    expect(s.deductedCredits).toBe(plain + 2);
    expect(await credits(server.url, key)).toBe(50 - plain - 2);
  });

  it('offers faces in get-capabilities, and the app’s remote backend reads it and reports faces per image', async () => {
    const { key } = await addUser(server, 'caps2@example.com', 50);
    const r = await postJson(server.url, '/get-capabilities', key, {});
    expect(r.json).toMatchObject({ status: 'success', data: { faceEnhancement: true } });
    const backend = createRemoteBackend({ baseUrl: server.url, apiKey: key });
    expect(await backend.faceEnhancement?.()).toBe(true);
    const outDir = await tempDir('crisp-face-remote-');
    const out = await backend.upscale({
      inputPath: path.join(IMAGES_DIR, 'set5-x2', 'lr', 'woman_LRBI_x2.png'),
      inputName: 'woman.png',
      settings: { model: 'digital-art-4x', scale: 2, saveImageAs: 'png', compression: 0, face: { model: null } },
      outputPath: path.join(outDir, 'woman.png'),
    });
    expect(out.faces).toEqual({ found: 1, enhanced: 1 });
    await backend.close();
  });
});
