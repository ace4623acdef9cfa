/**
 * Models in the app (issue 6): download from the service with progress events (against a loopback
 * server standing in for the internet), imported custom models listed and watched, and the denoise
 * setting passed through to the local engine.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat, writeFile, mkdir } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { createService, type ServiceDeps, type ServiceHandle } from '../../app/service/createService.js';
import type { JobItem, ModelDownloadEvent, ServiceEvent, Settings } from '../../app/service/crispService.js';
import { callServiceMethod } from '../../app/service/serviceArgs.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { identityFaceModel } from '../faces/support/faceModels.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { BIRD } from './appHelpers.js';

const PTH = path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth');

/** Serves ONNX_DIR over loopback HTTP, in small slow chunks so progress is observable. */
async function startModelServer(): Promise<{ base: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer(async (req, res) => {
    requests.push(req.url ?? '');
    const file = path.join(ONNX_DIR, path.basename(decodeURIComponent(req.url ?? '')));
    const st = await stat(file).catch(() => undefined);
    if (!st) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': st.size, 'content-type': 'application/octet-stream' });
    const stream = createReadStream(file, { highWaterMark: 128 * 1024 });
    stream.on('data', (chunk) => {
      res.write(chunk);
      stream.pause();
      setTimeout(() => stream.resume(), 15);
    });
    stream.on('end', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function sha256Of(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

function waitForEvent<T extends ServiceEvent>(
  svc: ServiceHandle,
  match: (e: ServiceEvent) => e is T,
  timeoutMs = 30_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error('timed out waiting for a service event'));
    }, timeoutMs);
    const stop = svc.subscribe((e) => {
      if (!match(e)) return;
      clearTimeout(timer);
      stop();
      resolve(e);
    });
  });
}

/** Adds one image, runs the queue, answers the finished item. */
async function upscaleOne(svc: ServiceHandle, input: string): Promise<JobItem> {
  const finished = waitForEvent(
    svc,
    (e): e is Extract<ServiceEvent, { type: 'batchFinished' }> => e.type === 'batchFinished',
    110_000,
  );
  const [item] = await svc.addPaths([input]);
  await svc.start();
  await finished;
  const done = (await svc.getQueue()).items.find((i) => i.id === item!.id)!;
  return done;
}

describe('models in the app', () => {
  let dir: string;
  const open: ServiceHandle[] = [];
  beforeAll(async () => {
    dir = await tempDir('crisp-app-models-');
  });
  afterAll(async () => {
    for (const svc of open) await svc.close();
    await removeDir(dir);
  });

  async function service(
    name: string,
    deps: Partial<ServiceDeps> = {},
    settings: Partial<Settings> = {},
  ): Promise<ServiceHandle> {
    const dataDir = path.join(dir, name, 'data');
    const svc = await createService({
      dataDir,
      secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
      modelDirs: [],
      modelsDir: path.join(dir, name, 'models'),
      modelsWatchDebounceMs: 100,
      settingsDefaults: {
        executionProvider: 'cpu',
        outputFolder: path.join(dir, name, 'out'),
        overwrite: 'keep',
        ...settings,
      },
      ...deps,
    });
    open.push(svc);
    return svc;
  }

  it('downloads a model with progress events, lists it as installed, and upscales with it', async () => {
    const server = await startModelServer();
    try {
      const svc = await service('download', {
        download: {
          target: (entry) => ({
            name: entry.name,
            file: entry.file,
            scale: entry.scale,
            download: { url: `${server.base}/${entry.file}`, format: 'onnx', sha256: null, size: null },
          }),
        },
      });
      const file = path.join(ONNX_DIR, 'realesr-animevideov3.onnx');
      const size = (await stat(file)).size;
      expect((await svc.listModels()).find((m) => m.name === FAST_MODEL)?.installed).toBe(false);

      const events: ModelDownloadEvent[] = [];
      let modelsChanged = 0;
      svc.subscribe((e) => {
        if (e.type === 'modelDownload') events.push(e);
        if (e.type === 'modelsChanged') modelsChanged++;
      });
      // Through the same checked entry point the IPC and HTTP transports use; two calls share one download.
      const [info, again] = await Promise.all([
        callServiceMethod(svc, 'downloadModel', [FAST_MODEL]),
        svc.downloadModel(FAST_MODEL),
      ]);
      expect(info).toMatchObject({ name: FAST_MODEL, installed: true, scale: 4 });
      expect(again).toEqual(info);
      expect(server.requests).toEqual(['/realesr-animevideov3.onnx']);

      expect(events[0]).toMatchObject({ name: FAST_MODEL, state: 'downloading', received: 0 });
      const middle = events.filter((e) => e.state === 'downloading' && e.received > 0 && e.received < size);
      expect(middle.length).toBeGreaterThan(0);
      expect(middle.every((e) => e.total === size)).toBe(true);
      const received = events.map((e) => e.received);
      expect(received).toEqual([...received].sort((a, b) => a - b));
      expect(events.at(-1)).toEqual({
        type: 'modelDownload',
        name: FAST_MODEL,
        received: size,
        total: size,
        state: 'installed',
      });
      expect(modelsChanged).toBeGreaterThan(0);

      const installedFile = path.join(dir, 'download', 'models', 'realesr-animevideov3.onnx');
      expect(await sha256Of(installedFile)).toBe(await sha256Of(file));
      expect((await svc.listModels()).find((m) => m.name === FAST_MODEL)?.installed).toBe(true);

      await svc.updateSettings({ model: FAST_MODEL, scale: 2 });
      const item = await upscaleOne(svc, BIRD);
      expect(item.status).toBe('done');
      const meta = await sharp(item.outputPath!).metadata();
      const src = await sharp(BIRD).metadata();
      expect([meta.width, meta.height]).toEqual([src.width! * 2, src.height! * 2]);
    } finally {
      await server.close();
    }
  });

  it('downloads the GFPGAN v1.4 face model with size, progress, checksum and cancel (a local stand-in server)', async () => {
    // The stand-in for GFPGAN: a valid face-convention ONNX (identity), served over loopback. The first request
    // is held after its first chunk until the test has cancelled it (a test-only gate, not a timing race).
    const onnx = Buffer.from(identityFaceModel());
    const sha = createHash('sha256').update(onnx).digest('hex');
    let releaseHeld: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (releaseHeld = resolve));
    let firstChunkSent: () => void = () => undefined;
    const firstChunk = new Promise<void>((resolve) => (firstChunkSent = resolve));
    let requests = 0;
    const server = http.createServer((req, res) => {
      requests++;
      const from = Number(/bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1] ?? 0);
      const body = onnx.subarray(from);
      res.writeHead(from ? 206 : 200, {
        'content-length': body.length,
        ...(from ? { 'content-range': `bytes ${from}-${onnx.length - 1}/${onnx.length}` } : {}),
      });
      if (requests === 1) {
        res.write(body.subarray(0, 64), () => firstChunkSent());
        void held.then(() => res.destroy());
        return;
      }
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      let sha256 = 'f'.repeat(64);
      const svc = await service('face-download', {
        download: {
          faceTarget: (entry) => ({
            ...entry,
            download: { url: `${base}/GFPGANv1.4.onnx`, format: 'onnx', sha256, size: onnx.length },
          }),
        },
      });
      const listed = (await svc.listModels()).find((m) => m.name === 'gfpgan-1.4');
      // Before: offered with the real release's size and licence.
      expect(listed).toMatchObject({ kind: 'face', installed: false, licence: 'Apache-2.0', downloadSize: 348632874 });
      const events: ModelDownloadEvent[] = [];
      svc.subscribe((e) => e.type === 'modelDownload' && e.name === 'gfpgan-1.4' && events.push(e));

      // Cancel while the first response is held: nothing installed, said as cancelled (not failed).
      const first = callServiceMethod(svc, 'downloadModel', ['gfpgan-1.4']);
      await firstChunk;
      await callServiceMethod(svc, 'cancelDownload', ['gfpgan-1.4']);
      await expect(first).rejects.toThrow('The download of GFPGAN v1.4 was cancelled.');
      releaseHeld();
      expect(events.at(-1)).toMatchObject({ state: 'cancelled' });
      const installedFile = path.join(dir, 'face-download', 'models', 'face', 'gfpgan-1.4.onnx');
      await expect(stat(installedFile)).rejects.toThrow();

      // A checksum that does not match: refused in words, nothing installed.
      await expect(svc.downloadModel('gfpgan-1.4')).rejects.toThrow(/sha256 mismatch for gfpgan-1.4/);
      expect(events.at(-1)).toMatchObject({ state: 'failed' });
      await expect(stat(installedFile)).rejects.toThrow();

      // The right checksum: installed, checked by a run, listed, and "Enhance faces" can use it.
      sha256 = sha;
      const info = await svc.downloadModel('gfpgan-1.4');
      expect(info).toMatchObject({ name: 'gfpgan-1.4', kind: 'face', installed: true, title: 'GFPGAN v1.4' });
      expect(events.at(-1)).toEqual({
        type: 'modelDownload',
        name: 'gfpgan-1.4',
        received: onnx.length,
        total: onnx.length,
        state: 'installed',
      });
      expect(await sha256Of(installedFile)).toBe(sha);
    } finally {
      releaseHeld();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('reports a failed download in plain words and installs nothing', async () => {
    const server = await startModelServer();
    try {
      const svc = await service('download-fail', {
        download: {
          target: (entry) => ({
            ...entry,
            download: { url: `${server.base}/missing.onnx`, format: 'onnx', sha256: null, size: null },
          }),
        },
      });
      const events: ModelDownloadEvent[] = [];
      svc.subscribe((e) => e.type === 'modelDownload' && events.push(e));
      await expect(svc.downloadModel(FAST_MODEL)).rejects.toThrow(/Could not install .*HTTP 404/);
      expect(events.at(-1)).toMatchObject({
        name: FAST_MODEL,
        state: 'failed',
        error: expect.stringMatching(/HTTP 404/),
      });
      expect((await svc.listModels()).find((m) => m.name === FAST_MODEL)?.installed).toBe(false);
      // Refused before any network use: an unknown name (by the transport's schema) and Cloud mode.
      await expect(callServiceMethod(svc, 'downloadModel', ['custom:x'])).rejects.toThrow(/invalid arguments/);
      await svc.updateSettings({ mode: 'cloud', baseUrl: 'http://127.0.0.1:9' });
      await expect(svc.downloadModel(FAST_MODEL)).rejects.toThrow(/Cloud mode needs no downloads/);
      expect(server.requests).toEqual(['/missing.onnx']);
    } finally {
      await server.close();
    }
  });

  it('lists imported custom models in Local mode, follows the folder, and upscales with one', async () => {
    const svc = await service('custom', {}, { denoise: 0.3 });
    const modelsDir = path.join(dir, 'custom', 'models');
    const changed = () =>
      waitForEvent(
        svc,
        (e): e is Extract<ServiceEvent, { type: 'modelsChanged' }> => e.type === 'modelsChanged',
        20_000,
      );
    expect((await svc.listModels()).some((m) => m.kind === 'custom')).toBe(false);

    // The custom folder does not exist yet: the first import creates it and is still noticed.
    let event = changed();
    await importCustomModel(PTH, { modelsDir, name: 'anime' });
    await event;
    const listed = (await svc.listModels()).find((m) => m.name === 'custom:anime');
    expect(listed).toMatchObject({ name: 'custom:anime', title: 'anime', kind: 'custom', scale: 4, installed: true });

    // Now the folder exists and is watched: a second import is noticed too.
    event = changed();
    await importCustomModel(PTH, { modelsDir, name: 'anime-two' });
    await event;
    expect((await svc.listModels()).filter((m) => m.kind === 'custom').map((m) => m.name)).toEqual([
      'custom:anime',
      'custom:anime-two',
    ]);

    // The worker is given the custom folder; denoise (set to 0.3) is not sent for a model without it.
    await svc.updateSettings({ model: 'custom:anime', scale: 4 });
    const item = await upscaleOne(svc, BIRD);
    expect(item.error).toBeUndefined();
    expect(item.status).toBe('done');
    const src = await sharp(BIRD).metadata();
    expect(item.outputDimensions).toEqual({ width: src.width! * 4, height: src.height! * 4 });

    // Cloud offers exactly the contract's names.
    await svc.updateSettings({ mode: 'cloud', baseUrl: 'http://127.0.0.1:9' });
    const cloud = await svc.listModels();
    // The contract's 12 models, then the service's face entry (no service answers at this URL: left to the service).
    expect(cloud.filter((m) => m.kind !== 'face')).toHaveLength(12);
    expect(cloud.filter((m) => m.kind === 'face')).toMatchObject([{ name: 'service:faces', installed: true }]);
    expect(cloud.some((m) => m.name.startsWith('custom:'))).toBe(false);
  });

  it('passes denoise for service-lite-4x: strengths 0 and 1 give different images', async () => {
    const svc = await service('denoise', { modelDirs: [ONNX_DIR] }, { model: 'service-lite-4x', scale: 4, denoise: 0 });
    expect((await svc.getSettings()).denoise).toBe(0);
    const zero = await upscaleOne(svc, BIRD);
    expect(zero.status).toBe('done');
    await svc.updateSettings({ denoise: 1 });
    const one = await upscaleOne(svc, BIRD);
    expect(one.status).toBe('done');
    expect(one.outputPath).not.toBe(zero.outputPath);
    const [a, b] = await Promise.all([
      sharp(zero.outputPath!).raw().toBuffer(),
      sharp(one.outputPath!).raw().toBuffer(),
    ]);
    expect(a.length).toBe(b.length);
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff += Math.abs(a[i]! - b[i]!);
    expect(diff / a.length).toBeGreaterThan(0.5);
    await expect(svc.updateSettings({ denoise: 1.5 })).rejects.toThrow(/^Invalid setting denoise/);
  });

  it('an older settings file without denoise gets the default', async () => {
    const dataDir = path.join(dir, 'old', 'data');
    await mkdir(dataDir, { recursive: true });
    await writeFile(
      path.join(dataDir, 'settings.json'),
      JSON.stringify({ version: 1, mode: 'local', model: 'service-lite-4x', scale: 2 }),
    );
    const svc = await createService({
      dataDir,
      secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
      modelDirs: [],
      modelsDir: path.join(dir, 'old', 'models'),
    });
    open.push(svc);
    expect(await svc.getSettings()).toMatchObject({ model: 'service-lite-4x', scale: 2, denoise: 1 });
  });
});
