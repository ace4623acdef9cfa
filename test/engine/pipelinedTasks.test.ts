/**
 * `crisp serve`'s task runner one image ahead (issue 37): when an image's model work is done and only its
 * encode, write and publish remain, the next turn starts, so its inference overlaps that encode. Held with the
 * test gate at task 1's encode (no timing): task 2 is PROCESSED while task 1 is still held; task 1 then ends
 * PROCESSED, each charged once; a task's own images still run one at a time and keep their order.
 */
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePoint } from '../../engine/core/testGate.js';
import { LOCAL_CALLER } from '../../engine/service/api.js';
import type { Engine } from '../../engine/service/engine.js';
import { FAST_MODEL, makeEngine, removeDir, tempDir, waitForTask } from '../helpers/engineHarness.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { createTestGate, type TestGate } from '../helpers/testGate.js';

const LR = (n: string) => path.join(IMAGES_DIR, 'set5-x4/lr', `${n}_LRBI_x4.png`);
const fields = { model: FAST_MODEL, scale: 2, saveImageAs: 'png', enhanceFace: false } as const;

describe('the task runner starts the next image while the previous one encodes', () => {
  let dir: string;
  let engine: Engine;
  let gate: TestGate;
  beforeAll(async () => {
    dir = await tempDir('crisp-runner-overlap-');
    gate = await createTestGate({ inProcess: true });
    engine = await makeEngine({ dataDir: dir, tileSize: 64 });
  });
  afterAll(async () => {
    await engine.close();
    await gate.close();
    await removeDir(dir);
  });

  it('task 2 is PROCESSED while task 1 is held at its encode; then task 1', async () => {
    await gate.hold(encodePoint('first.png'));
    const t1 = await engine.startTask(LOCAL_CALLER, {
      fields,
      file: [{ originalFileName: 'first.png', data: { path: LR('baby') } }],
    });
    const t2 = await engine.startTask(LOCAL_CALLER, {
      fields,
      file: [{ originalFileName: 'second.png', data: { path: LR('bird') } }],
    });
    await gate.reached(encodePoint('first.png'));
    const done2 = await waitForTask(engine, t2.taskId);
    expect(done2.status).toBe('PROCESSED');
    expect(done2.files[0]!.dimensions).toEqual({ width: 144, height: 144 });
    const held = await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId: t1.taskId } });
    expect(held.status).toBe('ENHANCING');
    await gate.release(encodePoint('first.png'));
    const done1 = await waitForTask(engine, t1.taskId);
    expect(done1.status).toBe('PROCESSED');
    expect(done1.files[0]!.dimensions).toEqual({ width: 256, height: 256 });
    expect(done1.creditsDeducted).toBe(true);
    expect(done2.creditsDeducted).toBe(true);
  });

  it("a batch task's images keep their order, one at a time, while another task's image overlaps them", async () => {
    await gate.hold(encodePoint('a1.png'));
    const batch = await engine.startTask(LOCAL_CALLER, {
      fields,
      file: [
        { originalFileName: 'a1.png', data: { path: LR('butterfly') } },
        { originalFileName: 'a2.png', data: { path: LR('head') } },
      ],
    });
    const other = await engine.startTask(LOCAL_CALLER, {
      fields,
      file: [{ originalFileName: 'b.png', data: { path: LR('woman') } }],
    });
    await gate.reached(encodePoint('a1.png'));
    // While a1 encodes, the other task runs (not a2: a task's images never overlap each other).
    expect((await waitForTask(engine, other.taskId)).status).toBe('PROCESSED');
    const mid = await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId: batch.taskId } });
    expect(mid.status).toBe('ENHANCING');
    await gate.release(encodePoint('a1.png'));
    const done = await waitForTask(engine, batch.taskId);
    expect(done.status).toBe('PROCESSED');
    expect(done.files.map((f) => [f.originalFileName, f.dimensions])).toEqual([
      ['a1.png', { width: 128, height: 128 }],
      ['a2.png', { width: 140, height: 140 }],
    ]);
    for (const f of done.files) expect((await sharp(path.join(dir, f.path)).metadata()).format).toBe('png');
  });
});
