/**
 * The desktop/CLI queue one image ahead (issue 37): once an image's model work is done and only its encode and
 * write remain, the engine process says so and the queue sends the next image, whose decode and inference then
 * overlap that encode. Held with the test gate at the first image's encode (no timing): the second image is
 * upscaled and written while the first is still held; output names are decided as a one-at-a-time run would
 * decide them; an engine that dies while an image only encodes does not fail that image.
 */
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { JobQueue, type JobSettings } from '../../app/jobs/jobQueue.js';
import { encodePoint, inputPoint } from '../../engine/core/testGate.js';
import { listFiles } from '../helpers/engineHarness.js';
import { LR_IMAGES } from './appHelpers.js';
import { pngSettings, useGatedEngine } from './gatedEngine.js';
import { until } from '../helpers/until.js';

const settings = (out: string, overwrite: JobSettings['overwrite']): JobSettings =>
  pngSettings(out, '{name}.{ext}', overwrite);

describe('the queue runs the next image while the previous one encodes', () => {
  const engine = useGatedEngine('crisp-app-overlap-', 64);

  it('writes image 2 while image 1 is held at its encode, then image 1; both whole', async () => {
    const { dir, local, gate } = engine;
    const inputs = path.join(dir, 'a');
    const out = path.join(dir, 'a-out');
    await mkdir(inputs);
    await copyFile(LR_IMAGES[0]!, path.join(inputs, 'one.png'));
    await copyFile(LR_IMAGES[1]!, path.join(inputs, 'two.png'));
    const queue = await JobQueue.open({ backend: () => local, settings: () => settings(out, 'keep') });
    await queue.addPaths([path.join(inputs, 'one.png'), path.join(inputs, 'two.png')]);
    await gate.hold(encodePoint('one.png'));
    await queue.start();
    await gate.reached(encodePoint('one.png'));
    const [one, two] = queue.snapshot().items;
    await until('image 2 done', () => queue.get(two!.id)?.status === 'done');
    // Image 1 is still held at its encode: running, and nothing of it under its name.
    expect(queue.get(one!.id)?.status).toBe('running');
    expect(await listFiles(out)).toEqual(['two.png']);
    await gate.release(encodePoint('one.png'));
    await queue.idle();
    expect(queue.snapshot().items.map((i) => i.status)).toEqual(['done', 'done']);
    expect(await listFiles(out)).toEqual(['one.png', 'two.png']);
    for (const [name, src] of [
      ['one.png', LR_IMAGES[0]!],
      ['two.png', LR_IMAGES[1]!],
    ] as const) {
      const inMeta = await sharp(src).metadata();
      const outMeta = await sharp(path.join(out, name)).metadata();
      expect([outMeta.width, outMeta.height]).toEqual([inMeta.width! * 2, inMeta.height! * 2]);
    }
  });

  it('names outputs as a one-at-a-time run would: the image behind gets the numbered name', async () => {
    const { dir, local, gate } = engine;
    const inputs = path.join(dir, 'b');
    const out = path.join(dir, 'b-out');
    await mkdir(inputs);
    await copyFile(LR_IMAGES[2]!, path.join(inputs, 'p.png'));
    await copyFile(LR_IMAGES[3]!, path.join(inputs, 'q.png'));
    // One template name for both: the second must not take the name the first is still writing.
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => ({ ...settings(out, 'keep'), template: 'same.{ext}' }),
    });
    await queue.addPaths([path.join(inputs, 'p.png'), path.join(inputs, 'q.png')]);
    await gate.hold(encodePoint('p.png'));
    await queue.start();
    await gate.reached(encodePoint('p.png'));
    const [p, q] = queue.snapshot().items;
    await until('image 2 done', () => queue.get(q!.id)?.status === 'done');
    expect(await listFiles(out)).toEqual(['same-2.png']);
    await gate.release(encodePoint('p.png'));
    await queue.idle();
    expect(queue.get(p!.id)?.status).toBe('done');
    expect(path.basename(queue.get(p!.id)?.outputPath ?? '')).toBe('same.png');
    expect(await listFiles(out)).toEqual(['same-2.png', 'same.png']);
    // Each file is its own image (p: butterfly 64², q: head 70²): the sizes tell them apart.
    const size = async (f: string) => {
      const m = await sharp(f).metadata();
      return [m.width, m.height];
    };
    const twice = async (f: string) => (await size(f)).map((v) => v! * 2);
    expect(await size(path.join(out, 'same.png'))).toEqual(await twice(LR_IMAGES[2]!));
    expect(await size(path.join(out, 'same-2.png'))).toEqual(await twice(LR_IMAGES[3]!));
  });

  it('with replace, the image behind waits for the same name and wins, as it would one at a time', async () => {
    const { dir, local, gate } = engine;
    const inputs = path.join(dir, 'r');
    const out = path.join(dir, 'r-out');
    await mkdir(inputs);
    await copyFile(LR_IMAGES[2]!, path.join(inputs, 'p.png'));
    await copyFile(LR_IMAGES[3]!, path.join(inputs, 'q.png'));
    const queue = await JobQueue.open({
      backend: () => local,
      settings: () => ({ ...settings(out, 'replace'), template: 'same.{ext}' }),
    });
    await queue.addPaths([path.join(inputs, 'p.png'), path.join(inputs, 'q.png')]);
    await gate.hold(encodePoint('p.png'));
    await queue.start();
    await gate.reached(encodePoint('p.png'));
    await gate.release(encodePoint('p.png'));
    await queue.idle();
    expect(queue.snapshot().items.map((i) => i.status)).toEqual(['done', 'done']);
    expect(await listFiles(out)).toEqual(['same.png']);
    const m = await sharp(path.join(out, 'same.png')).metadata();
    const src = await sharp(LR_IMAGES[3]!).metadata();
    expect([m.width, m.height]).toEqual([src.width! * 2, src.height! * 2]);
  });

  it('an engine killed while image 1 only encodes fails image 2 alone; image 1 runs again and is written', async () => {
    const { dir, local, gate } = engine;
    const inputs = path.join(dir, 'c');
    const out = path.join(dir, 'c-out');
    await mkdir(inputs);
    await copyFile(LR_IMAGES[3]!, path.join(inputs, 'first.png'));
    await copyFile(LR_IMAGES[4]!, path.join(inputs, 'second.png'));
    const queue = await JobQueue.open({ backend: () => local, settings: () => settings(out, 'keep') });
    await queue.addPaths([path.join(inputs, 'first.png'), path.join(inputs, 'second.png')]);
    await gate.hold(encodePoint('first.png'));
    await gate.hold(inputPoint('second.png'));
    await queue.start();
    await gate.reached(encodePoint('first.png'));
    const pid = await gate.reached(inputPoint('second.png'));
    expect(pid).toBe(local.workerPid());
    // Image 1 is past its model, image 2 has started: the kill lands on both.
    await gate.release(encodePoint('first.png'));
    process.kill(pid, 'SIGKILL');
    await until('image 2 failed', () => queue.snapshot().items[1]?.status === 'failed');
    await gate.release(inputPoint('second.png'));
    await queue.idle();
    const items = queue.snapshot().items;
    expect(items.map((i) => i.status)).toEqual(['done', 'failed']);
    expect(items[1]!.error).toMatch(/^The local engine stopped unexpectedly while upscaling second\.png/);
    expect(await listFiles(out)).toEqual(['first.png']);
  });
});
