/**
 * A chain in one task: a 1× restoration model (an imported checkpoint) over the image, then the upscaler. The
 * result equals running the two models as two tasks, pixel for pixel; the intermediate is gone afterwards;
 * an upscaler or an unknown name as the pre-model is refused before any work.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import type { Engine } from '../../engine/service/engine.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { nearIdentity } from '../convert/support/reference.js';
import { writeSafetensors } from '../convert/support/torchWriters.js';
import { contractRefusal, FAST_MODEL, makeEngine, removeDir, tempDir, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');
const file = (p: string) => [{ originalFileName: path.basename(p), data: { path: p } }];

async function pixels(p: string) {
  const { data, info } = await sharp(p).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

describe('pre-model chain', () => {
  let engine: Engine;
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-chain-');
    const models = path.join(dir, 'models');
    const ckpt = path.join(dir, '1x-restore.safetensors');
    await writeFile(ckpt, writeSafetensors(nearIdentity()));
    const m = await importCustomModel(ckpt, { modelsDir: models, name: 'restore' });
    expect(m.scale).toBe(1);
    engine = await makeEngine({ customModelsDir: models });
  });
  afterAll(async () => {
    await engine.close();
    await removeDir(dir);
  });

  const run = async (fields: Record<string, unknown>, input: string, outputPath: string, preModel?: string) => {
    const { taskId } = await engine.startTask(LOCAL_CALLER, {
      fields: { scale: 2, saveImageAs: 'png', enhanceFace: false, ...fields },
      file: file(input),
      outputPath,
      ...(preModel ? { preModel } : {}),
    });
    const percents: number[] = [];
    const s = await waitForTask(
      engine,
      taskId,
      LOCAL_CALLER,
      (x) => percents.push(Number.parseInt(x.progress, 10)),
      120_000,
    );
    expect(s.status, s.error).toBe('PROCESSED');
    for (let i = 1; i < percents.length; i++) expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1]!);
    return s;
  };

  it('equals the restorer then the upscaler as two tasks, and leaves only the output', async () => {
    const out = path.join(dir, 'chain');
    await mkdir(out);
    const chained = path.join(out, 'chained.png');
    const s = await run({ model: FAST_MODEL }, BIRD, chained, 'custom:restore');
    expect(s.files[0]!.dimensions).toEqual({ width: 144, height: 144 });

    const restored = path.join(dir, 'restored.png');
    await run({ model: 'custom:restore', scale: 1 }, BIRD, restored);
    const twoTasks = path.join(dir, 'two-tasks.png');
    await run({ model: FAST_MODEL }, restored, twoTasks);

    const a = await pixels(chained);
    const b = await pixels(twoTasks);
    expect([a.width, a.height]).toEqual([144, 144]);
    expect(a.data.equals(b.data)).toBe(true);
    // The restorer did something: the chain differs from the upscaler alone.
    const alone = path.join(dir, 'alone.png');
    await run({ model: FAST_MODEL }, BIRD, alone);
    expect((await pixels(alone)).data.equals(a.data)).toBe(false);
    expect(await readdir(out)).toEqual(['chained.png']);
  }, 180_000);

  it('refuses an upscaler or an unknown model as the pre-model, before any work', async () => {
    const fields = { model: FAST_MODEL, scale: 2, saveImageAs: 'png', enhanceFace: false };
    const up = await contractRefusal(
      engine.startTask(LOCAL_CALLER, { fields, file: file(BIRD), preModel: FAST_MODEL }),
    );
    expect(up.status).toBe(400);
    expect(up.message).toContain(
      `preModel: ${FAST_MODEL} upscales ×4; the model run before the upscaler must be a 1× restoration model`,
    );
    const unknown = await contractRefusal(
      engine.startTask(LOCAL_CALLER, { fields, file: file(BIRD), preModel: 'custom:nope' }),
    );
    expect(unknown.status).toBe(400);
    expect(unknown.message).toContain("preModel: Unknown model 'custom:nope'");
  });
});
