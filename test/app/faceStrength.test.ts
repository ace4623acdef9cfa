/**
 * Issue 25, one face vocabulary: the face model and strength travel with each job, not with the local engine.
 * Moving the strength slider between two items keeps the same engine worker process (one spawn), and the
 * second item runs with the new strength.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForkSpawner, type WorkerSpawner } from '../../app/backends/local/workerSpawner.js';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService } from '../../app/service/createService.js';
import type { ServiceEvent } from '../../app/service/crispService.js';
import type { FaceJob } from '../../engine/core/index.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { constantFaceModel, writeModel } from '../faces/support/faceModels.js';

const WOMAN = path.join(IMAGES_DIR, 'set5-x2', 'lr', 'woman_LRBI_x2.png'); // 114×172, one face

let dir: string;
let modelsDir: string;
beforeAll(async () => {
  dir = await tempDir('crisp-face-strength-');
  // A models folder as installs lay it out: the detector and one imported face model that paints faces red.
  modelsDir = path.join(dir, 'models');
  mkdirSync(path.join(modelsDir, 'face'), { recursive: true });
  symlinkSync(
    path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx'),
    path.join(modelsDir, 'face', 'yunet_s_dynamic.onnx'),
  );
  writeModel(path.join(modelsDir, 'face'), 'custom-red.onnx', constantFaceModel([1, -1, -1]));
});
afterAll(async () => {
  await removeDir(dir);
});

/** RGB at the middle of the face (the face model paints it red; a lower strength lets the upscale show). */
async function faceCentre(file: string): Promise<number[]> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (Math.round(info.height * 0.35) * info.width + Math.round(info.width * 0.5)) * info.channels;
  return Array.from(data.subarray(i, i + 3));
}

describe('face strength per job', () => {
  it('a new strength between two items keeps the engine worker, and the second item runs with it', async () => {
    let spawns = 0;
    const faces: (FaceJob | undefined)[] = [];
    const fork = createForkSpawner();
    // The real worker process, counted, with the face of every job it is sent recorded.
    const spawner: WorkerSpawner = {
      spawn() {
        spawns++;
        const handle = fork.spawn();
        return {
          get pid() {
            return handle.pid;
          },
          send: (msg) => {
            if (msg.type === 'upscale') faces.push(msg.settings.face);
            handle.send(msg);
          },
          onMessage: (fn) => handle.onMessage(fn),
          onExit: (fn) => handle.onExit(fn),
          kill: () => handle.kill(),
        };
      },
    };
    const dataDir = path.join(dir, 'app');
    const inputs = path.join(dir, 'in');
    const out = path.join(dir, 'out');
    await mkdir(inputs, { recursive: true });
    const svc = await createService({
      dataDir,
      secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
      modelDirs: [ONNX_DIR],
      modelsDir,
      spawner,
    });
    try {
      const events: ServiceEvent[] = [];
      svc.subscribe((e) => events.push(e));
      const runOne = async (name: string) => {
        const finished = events.filter((e) => e.type === 'batchFinished').length;
        await copyFile(WOMAN, path.join(inputs, name));
        await svc.addPaths([path.join(inputs, name)]);
        await svc.start();
        await expect
          .poll(() => events.filter((e) => e.type === 'batchFinished').length, { timeout: 60_000 })
          .toBe(finished + 1);
      };
      await svc.updateSettings({
        mode: 'local',
        executionProvider: 'cpu',
        model: FAST_MODEL,
        scale: 2,
        format: 'png',
        outputFolder: out,
        face: true,
        faceModel: 'custom:red',
        faceStrength: 1,
      });
      await runOne('a.png');
      await svc.updateSettings({ faceStrength: 0.3 });
      await runOne('b.png');

      const items = (await svc.getQueue()).items;
      expect(items.map((i) => i.status)).toEqual(['done', 'done']);
      // One engine worker for both items: the strength is not part of the local backend's identity.
      expect(spawns).toBe(1);
      expect(faces).toEqual([
        { model: 'custom:red', strength: 1 },
        { model: 'custom:red', strength: 0.3 },
      ]);
      const [full, blended] = await Promise.all([
        faceCentre(path.join(out, 'a_digital-art-4x-face-custom-red_x2.png')),
        faceCentre(path.join(out, 'b_digital-art-4x-face-custom-red-fs0.3_x2.png')),
      ]);
      // Strength 1: the restored face alone (pure red); 0.3: mostly the upscaled face shows through.
      expect(full).toEqual([255, 0, 0]);
      expect(blended[1]! + blended[2]!).toBeGreaterThan(50);
    } finally {
      await svc.close();
    }
  });
});
