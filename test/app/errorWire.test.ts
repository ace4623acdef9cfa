/**
 * Issue 38, one error wire: a failure crosses core's worker threads and the local engine process as one shape
 * ({name, message, code, status, params}, engine/core/errorWire.ts), so the code core raised is the code the
 * app's queue, `--json` and the renderer see — never a code rebuilt from an HTTP status, and never a
 * service's code ("try Local mode") for a local failure. The queue and the German window:
 * test/renderer/localErrors.test.tsx.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend, type LocalBackend } from '../../app/backends/local/localBackend.js';
import { createForkSpawner, type WorkerHandle } from '../../app/backends/local/workerSpawner.js';
import type { UpscaleSettings } from '../../app/backends/backend.js';
import type { FromWorker, ToWorker } from '../../app/worker/protocol.js';
import { CrispError, crispError, isCrispError } from '../../engine/contract/index.js';
import { fromWire, toWire, type WireError } from '../../engine/core/index.js';
import { IMAGES_DIR, ONNX_DIR } from '../helpers/paths.js';

const FAST_MODEL = 'digital-art-4x';
/** A catalog model the test models folder does not hold. */
const NOT_INSTALLED = 'service-standard-4x';

let dir: string;
let bird: string;
let cut: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-error-wire-'));
  bird = path.join(dir, 'bird.png');
  await sharp(path.join(IMAGES_DIR, 'set5/bird.png')).resize(64, 64).png().toFile(bird);
  // Its header is whole (it passes the input check), its pixel data is cut short: core's decoder refuses it in
  // a worker thread, and that refusal crosses both wires.
  const noisy = await sharp({
    create: {
      width: 96,
      height: 96,
      channels: 3,
      background: '#888',
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  })
    .png()
    .toBuffer();
  cut = path.join(dir, 'cut.png');
  await writeFile(cut, noisy.subarray(0, Math.floor(noisy.length / 2)));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const settings = (over: Partial<UpscaleSettings> = {}): UpscaleSettings => ({
  model: FAST_MODEL,
  scale: 2,
  saveImageAs: 'png',
  compression: 0,
  ...over,
});

describe("core's error wire", () => {
  it('carries the catalog code, status, params and name, and an errno code, and rebuilds a CrispError', () => {
    const sent = new CrispError('model-not-installed', 'Model x is not installed.', { params: { name: 'x' } });
    const wire = JSON.parse(JSON.stringify(toWire(sent))) as WireError;
    expect(wire).toEqual({
      name: 'CrispError',
      message: 'Model x is not installed.',
      code: 'model-not-installed',
      params: { name: 'x' },
    });
    const back = fromWire(wire);
    expect(back).toBeInstanceOf(CrispError);
    expect(back).toMatchObject({ code: 'model-not-installed', params: { name: 'x' }, message: sent.message });

    const refusal = fromWire(toWire(crispError('bad-request', { detail: 'scale 3 is not 2 or 4' })));
    expect(refusal).toMatchObject({ code: 'bad-request', status: 400, params: { detail: 'scale 3 is not 2 or 4' } });

    const io = fromWire(toWire(Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' })));
    expect([isCrispError(io), (io as NodeJS.ErrnoException).code]).toEqual([false, 'ENOSPC']);
  });
});

describe('through the local backend (a real engine process): each refusal keeps its own code', () => {
  let local: LocalBackend;
  beforeAll(() => {
    local = createLocalBackend({ dataDir: path.join(dir, 'engine'), modelDirs: [ONNX_DIR], executionProvider: 'cpu' });
  });
  afterAll(async () => local.close());

  const refusal = (inputPath: string, s: UpscaleSettings) =>
    local
      .upscale({
        inputPath,
        inputName: path.basename(inputPath),
        outputPath: path.join(dir, 'out', `never-${Math.random()}.png`),
        settings: s,
      })
      .catch((e: unknown) => e);

  it('a catalog model that is not installed: model-not-installed, naming the model', async () => {
    const e = await refusal(bird, settings({ model: NOT_INSTALLED }));
    expect(e).toMatchObject({ code: 'model-not-installed', params: { name: NOT_INSTALLED } });
    expect((e as Error).message).toMatch(/^Model 'service-standard-4x' \(RealESRGAN_x4plus\) is not installed/);
  });

  it('faces asked for with no face model: face-model-missing', async () => {
    const e = await refusal(bird, settings({ face: { model: null } }));
    expect(e).toMatchObject({ code: 'face-model-missing' });
    expect((e as Error).message).toMatch(/^Face enhancement needs a face model and none is installed\. /);
  });

  it('a pre-model that does not exist: unknown-model, naming it', async () => {
    const e = await refusal(bird, settings({ preModel: 'no-such-model' }));
    expect(e).toMatchObject({ code: 'unknown-model', params: { name: 'no-such-model' } });
  });

  it("an image core cannot decode (in its worker thread): damaged-image, with core's sentence", async () => {
    const e = await refusal(cut, settings());
    expect(e).toMatchObject({
      code: 'damaged-image',
      name: 'ImageInputError',
      params: { name: 'cut.png', detail: 'the file is truncated (incomplete download or copy?)' },
    });
    expect((e as Error).message).toMatch(/^"cut\.png" could not be decoded: the file is truncated/);
  });

  it('a request the contract refuses: bad-request, its detail as the sentence (no "Bad Request: " to strip)', async () => {
    const e = await refusal(bird, settings({ compression: 200 }));
    expect(e).toMatchObject({ code: 'bad-request', status: 400 });
    expect((e as CrispError).message).toBe('compression 200 is not an integer from 0 to 100');
    expect((e as CrispError).detail).toBe((e as CrispError).message);
  });

  it('the disk budget: not-enough-space, naming the image', async () => {
    const tight = createLocalBackend({
      dataDir: path.join(dir, 'engine-tight'),
      modelDirs: [ONNX_DIR],
      executionProvider: 'cpu',
      spawner: createForkSpawner({ env: { ...process.env, CRISP_DISK_RESERVE_BYTES: String(2 ** 60) } }),
    });
    try {
      const e = await tight
        .upscale({
          inputPath: bird,
          inputName: 'bird.png',
          outputPath: path.join(dir, 'out', 'n.png'),
          settings: settings(),
        })
        .catch((x: unknown) => x);
      expect(e).toMatchObject({ code: 'not-enough-space', params: { name: 'bird.png' } });
      expect((e as Error).message).toMatch(/^Not enough free disk space to upscale "bird\.png": its output needs /);
    } finally {
      await tight.close();
    }
  });
});

/** An engine process that answers every upscale with the given wire error (what a real one sends on failure). */
function failingSpawner(error: WireError) {
  return {
    spawn(): WorkerHandle {
      let listener: ((m: FromWorker) => void) | undefined;
      let exited: (() => void) | undefined;
      return {
        pid: undefined,
        send(msg: ToWorker) {
          queueMicrotask(() => {
            if (msg.type === 'init') listener?.({ type: 'ready', devices: ['cpu'] });
            else if (msg.type === 'upscale') listener?.({ type: 'failed', id: msg.id, error });
            else if (msg.type === 'shutdown') exited?.();
          });
        },
        onMessage: (fn) => (listener = fn),
        onExit: (fn) => (exited = () => fn({ code: 0, signal: null })),
        kill: () => exited?.(),
      };
    },
  };
}

describe('what the engine process sends is worded by the app as a local failure', () => {
  async function failWith(error: WireError) {
    const local = createLocalBackend({ dataDir: dir, spawner: failingSpawner(error) });
    try {
      return await local
        .upscale({ inputPath: bird, inputName: 'bird.png', outputPath: path.join(dir, 'x.png'), settings: settings() })
        .catch((e: unknown) => e as CrispError);
    } finally {
      await local.close();
    }
  }

  it('an uncatalogued error: upscale-failed naming the image, never the service’s processing-failed', async () => {
    const e = await failWith({ name: 'Error', message: 'onnxruntime: bad allocation\n    at Session.run' });
    expect(e).toMatchObject({
      code: 'upscale-failed',
      message: 'Something went wrong while upscaling bird.png: onnxruntime: bad allocation',
      params: { name: 'bird.png', detail: 'onnxruntime: bad allocation' },
    });
  });

  it('an errno error gets its row; a stop is cancelled', async () => {
    expect(await failWith({ name: 'Error', message: 'ENOSPC: no space left on device', code: 'ENOSPC' })).toMatchObject(
      { code: 'disk-full', message: expect.stringMatching(/^Cannot upscale bird\.png: the disk is full/) },
    );
    expect(await failWith(toWire(crispError('cancelled')))).toMatchObject({ code: 'cancelled' });
  });
});
