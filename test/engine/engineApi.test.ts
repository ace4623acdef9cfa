import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CALLER, type Caller } from '../../engine/service/api.js';
import type { TaskStatusData } from '../../engine/contract/index.js';
import type { Engine } from '../../engine/service/engine.js';
import {
  contractRefusal,
  FAST_MODEL,
  listFiles,
  makeEngine,
  removeDir,
  tempDir,
  waitForTask,
} from '../helpers/engineHarness.js';
import { hugePng } from '../helpers/craftedImages.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { createTestGate } from '../helpers/testGate.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png');
const settings = { model: FAST_MODEL, scale: 2, saveImageAs: 'png', enhanceFace: false };

function fileFrom(p: string, name = path.basename(p)) {
  return { originalFileName: name, data: { path: p } };
}

async function expectContractError(p: Promise<unknown>, status: number, message: string | RegExp) {
  const ce = await contractRefusal(p);
  expect(ce.status).toBe(status);
  if (typeof message === 'string') expect(ce.message).toBe(message);
  else expect(ce.message).toMatch(message);
}

describe('engine API (in-process contract)', () => {
  let engine: Engine;
  let dataDir: string;
  let scratch: string;

  beforeAll(async () => {
    dataDir = await tempDir();
    scratch = await tempDir();
    engine = await makeEngine({ dataDir });
  });
  afterAll(async () => {
    await engine.close();
    await removeDir(dataDir);
    await removeDir(scratch);
  });

  it('runs a task to PROCESSED with monotonic progress and a complete FileData', async () => {
    const started = await engine.startTask(LOCAL_CALLER, { fields: settings, file: [fileFrom(BIRD)] });
    expect(started).toEqual({
      message: expect.any(String),
      taskId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      creditsToDeduct: 0,
    });
    const seen: TaskStatusData[] = [];
    const s = await waitForTask(engine, started.taskId, LOCAL_CALLER, (x) => seen.push(x));
    expect(s.status).toBe('PROCESSED');
    expect(s.progress).toBe('100%');
    const percents = seen.map((x) => Number.parseInt(x.progress, 10));
    for (let i = 1; i < percents.length; i++) expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1] as number);
    for (const x of seen) {
      expect(x.progress).toMatch(/^\d{1,3}%$/);
      if (x.status !== 'PROCESSED') expect(x.progress).not.toBe('100%');
    }
    expect(s).toMatchObject({
      model: FAST_MODEL,
      scale: 2,
      saveImageAs: 'png',
      compression: 0,
      batchMode: false,
      creditsDeducted: true,
      deductedCredits: 0,
    });
    expect(s.files).toHaveLength(1);
    const f = s.files[0]!;
    expect(f.fileName).toBe(`bird_LRBI_x4_${FAST_MODEL}_x2.png`);
    expect(f.fileType).toBe('image/png');
    expect(f.originalFileName).toBe('bird_LRBI_x4.png');
    expect(f.dimensions).toEqual({ width: 144, height: 144 });
    expect(f.expiresAt).toBeGreaterThan(f.createdAt);
    const out = await engine.openOutput(LOCAL_CALLER, started.taskId, f.fileName);
    expect((await stat(out.path)).size).toBe(f.fileSize);
    const meta = await sharp(out.path).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([144, 144, 'png']);

    const record = await engine.getTaskRecord(LOCAL_CALLER, started.taskId);
    expect(record).toMatchObject({
      id: started.taskId,
      userId: 'local',
      filesCount: 1,
      status: 'PROCESSED',
      creditsToDeduct: 0,
    });
  });

  it('makes a batch task from several files and names duplicates apart', async () => {
    const r = await engine.startTask(LOCAL_CALLER, {
      fields: { ...settings, saveImageAs: 'jpg', scale: '1' },
      file: [fileFrom(BIRD), fileFrom(BIRD), fileFrom(path.join(IMAGES_DIR, 'set5-x4/lr/woman_LRBI_x4.png'))],
    });
    const s = await waitForTask(engine, r.taskId);
    expect(s.status).toBe('PROCESSED');
    expect(s.batchMode).toBe(true);
    expect(s.files.map((f) => f.fileName)).toEqual([
      `bird_LRBI_x4_${FAST_MODEL}_x1.jpg`,
      `bird_LRBI_x4_${FAST_MODEL}_x1-2.jpg`,
      `woman_LRBI_x4_${FAST_MODEL}_x1.jpg`,
    ]);
    expect(s.files[2]!.dimensions).toEqual({ width: 57, height: 86 });
  });

  it('refuses enhanceFace with the contract 400 when the engine has no face model', async () => {
    const err = await engine
      .startTask(LOCAL_CALLER, { fields: { ...settings, enhanceFace: 'true' }, file: [fileFrom(BIRD)] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      status: 400,
      message: 'Bad Request: face enhancement is not available on this server',
    });
  });

  describe('bad input gets the contract status and message and leaves the engine healthy', () => {
    const cases: Array<
      [
        string,
        () => Promise<{ fields: Record<string, unknown>; file?: ReturnType<typeof fileFrom>[] }>,
        number,
        RegExp | string,
      ]
    > = [
      [
        'a text file named .jpg',
        async () => ({ fields: settings, file: [fileFrom(await write('notes.jpg', 'hello, not an image'))] }),
        400,
        'Bad Request: notes.jpg is not a JPG, PNG or WEBP image',
      ],
      [
        'an empty file',
        async () => ({ fields: settings, file: [fileFrom(await write('empty.png', ''))] }),
        400,
        'Bad Request: empty.png is empty',
      ],
      [
        'a header claiming 100000×100000',
        async () => ({ fields: settings, file: [fileFrom(await write('huge.png', hugePng(100000, 100000)))] }),
        400,
        /huge\.png.*100000.*100000/,
      ],
      [
        'an unknown model',
        async () => ({ fields: { ...settings, model: 'ultra-9000' }, file: [fileFrom(BIRD)] }),
        400,
        /^Bad Request: model 'ultra-9000' is not one of 'service-standard-4x'/,
      ],
      [
        'scale 9',
        async () => ({ fields: { ...settings, scale: 9 }, file: [fileFrom(BIRD)] }),
        400,
        'Bad Request: scale 9 is not an integer from 1 to 8',
      ],
      [
        'format gif',
        async () => ({ fields: { ...settings, saveImageAs: 'gif' }, file: [fileFrom(BIRD)] }),
        400,
        "Bad Request: saveImageAs 'gif' is not one of 'jpg', 'png', 'webp'",
      ],
      [
        'no source',
        async () => ({ fields: settings }),
        400,
        'Bad Request: no image given: send exactly one of file, files or urls',
      ],
      [
        'two sources',
        async () => ({ fields: { ...settings, urls: '["http://example.com/a.png"]' }, file: [fileFrom(BIRD)] }),
        400,
        'Bad Request: send exactly one of file, files or urls, not several',
      ],
      [
        'a model that is not installed',
        async () => ({ fields: { ...settings, model: 'natural-max-4x' }, file: [fileFrom(BIRD)] }),
        400,
        /not installed\. Install it with "crisp models fetch natural-max-4x"/,
      ],
      [
        'webp output over 16383 px',
        async () => ({ fields: { ...settings, saveImageAs: 'webp', scale: 8 }, file: [fileFrom(await bigImage())] }),
        400,
        /WEBP holds at most 16383 pixels a side/,
      ],
    ];

    async function write(name: string, content: string | Uint8Array) {
      const p = path.join(scratch, name);
      await writeFile(p, content);
      return p;
    }
    async function bigImage() {
      const p = path.join(scratch, 'wide.png');
      await sharp({ create: { width: 2100, height: 8, channels: 3, background: '#808080' } })
        .png()
        .toFile(p);
      return p;
    }

    for (const [name, make, status, message] of cases) {
      it(name, async () => {
        const before = await listFiles(path.join(dataDir, 'tasks'));
        await expectContractError(
          make().then((input) => engine.startTask(LOCAL_CALLER, input)),
          status,
          message,
        );
        expect(await listFiles(path.join(dataDir, 'tasks'))).toEqual(before);
      });
    }

    it('a truncated PNG fails its task with a plain message and leaves no output', async () => {
      const bytes = await readFile(BIRD);
      const p = await write('cut.png', bytes.subarray(0, Math.floor(bytes.length / 2)));
      const r = await engine.startTask(LOCAL_CALLER, { fields: settings, file: [fileFrom(p)] });
      const s = await waitForTask(engine, r.taskId);
      expect(s.status).toBe('PROCESSING_FAILED');
      expect(s.error).toMatch(/cut\.png/);
      expect(s.error).not.toMatch(/\n\s+at /);
      expect(s.files).toEqual([]);
      expect((await listFiles(path.join(dataDir, 'tasks', r.taskId))).filter((f) => f.startsWith('outputs'))).toEqual(
        [],
      );
      // still healthy
      const ok = await engine.startTask(LOCAL_CALLER, { fields: settings, file: [fileFrom(BIRD)] });
      expect((await waitForTask(engine, ok.taskId)).status).toBe('PROCESSED');
    });
  });

  it('answers 404 "Task not found" for unknown ids and for another caller\'s task', async () => {
    await expectContractError(engine.getTaskStatus(LOCAL_CALLER, { data: { taskId: 'nope' } }), 404, 'Task not found');
    const r = await engine.startTask(LOCAL_CALLER, { fields: settings, file: [fileFrom(BIRD)] });
    const other: Caller = { userId: 'someone-else', email: 'x@example.com' };
    await expectContractError(engine.getTaskStatus(other, { data: { taskId: r.taskId } }), 404, 'Task not found');
    await waitForTask(engine, r.taskId);
  });

  it('cancels a running task within a tile and keeps no partial output', async () => {
    const big = path.join(scratch, 'cancel.png');
    await sharp(path.join(IMAGES_DIR, 'set5/baby.png')).toFile(big);
    // The test gate holds the task before its first tile (whatever the machine's speed); the gate ignores
    // the cancel, so the pipeline's own check between tiles is what stops it.
    const gate = await createTestGate({ inProcess: true });
    try {
      await gate.hold('tile-0');
      const r = await engine.startTask(LOCAL_CALLER, { fields: { ...settings, scale: 4 }, file: [fileFrom(big)] });
      await gate.reached('tile-0');
      expect((await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId: r.taskId } })).status).toBe('ENHANCING');
      const cancelled = engine.cancelTask(LOCAL_CALLER, r.taskId);
      await gate.release('tile-0');
      await cancelled;
      const s = await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId: r.taskId } });
      expect(s.status).toBe('PROCESSING_FAILED');
      expect(s.error).toBe('Cancelled');
      expect((await listFiles(path.join(dataDir, 'tasks', r.taskId))).filter((f) => f.startsWith('outputs'))).toEqual(
        [],
      );
    } finally {
      await gate.close();
    }
  });

  it('keeps finished tasks and their files across a restart', async () => {
    const r = await engine.startTask(LOCAL_CALLER, { fields: settings, file: [fileFrom(BIRD)] });
    const s = await waitForTask(engine, r.taskId);
    const reopened = await makeEngine({ dataDir });
    try {
      const again = await reopened.getTaskStatus(LOCAL_CALLER, { data: { taskId: r.taskId } });
      expect(again).toEqual(s);
      const out = await reopened.openOutput(LOCAL_CALLER, r.taskId, s.files[0]!.fileName);
      expect((await sharp(out.path).metadata()).width).toBe(144);
    } finally {
      await reopened.close();
    }
  });

  it('uploads a file in parts in-process and runs it through files', async () => {
    const bytes = await readFile(BIRD);
    const session = await engine.getUploadUrl(LOCAL_CALLER, {
      data: { fileSize: bytes.length, fileType: 'image/png', originalFileName: '../../etc/bird.png' },
    });
    expect(session.originalFileName).toBe('bird.png');
    expect(session.partUrls).toHaveLength(1);
    const part = await engine.putUploadPart(session.partUrls[0]!.signedUrl, bytes);
    expect(part.etag).toMatch(/^"[0-9a-f]{32}"$/);
    await expect(
      engine.completeMultipartUpload(LOCAL_CALLER, {
        data: { uploadId: session.uploadId, key: session.path, parts: [{ PartNumber: 1, ETag: part.etag }] },
      }),
    ).resolves.toEqual({ status: 'success' });
    const r = await engine.startTask(LOCAL_CALLER, {
      fields: { ...settings, files: JSON.stringify([{ path: session.path }]) },
    });
    const s = await waitForTask(engine, r.taskId);
    expect(s.status).toBe('PROCESSED');
    expect(s.files[0]!.originalFileName).toBe('bird.png');
  });
});
