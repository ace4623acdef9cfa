/** Custom models managed from the app: import a real .pth through the service (and its HTTP bridge), choose it, remove it. */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import { createMemorySecretStore } from '../../app/secrets/secretStore.js';
import { startUiServer, type RunningUiServer } from '../../app/ui/bridgeServer.js';
import { createHttpService } from '../../renderer/src/service/httpService.js';
import sharp from 'sharp';
import { IMAGES_DIR, MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';

const PTH = path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth');
let dir: string;
let svc: ServiceHandle;
let server: RunningUiServer;
const opened: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-model-mgmt-'));
  svc = await createService({
    dataDir: path.join(dir, 'data'),
    secrets: createMemorySecretStore(),
    modelDirs: [ONNX_DIR],
    modelsDir: path.join(dir, 'models'),
    modelsWatchDebounceMs: 20,
    openFolder: (folder) => {
      opened.push(folder);
      return true;
    },
  });
  server = await startUiServer({ service: svc, rendererDir: dir });
});
afterAll(async () => {
  await server.close();
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

describe('custom models from the app', () => {
  it('imports a .pth sent as bytes over the bridge, lists it, and removes it (resetting a saved choice)', async () => {
    const client = createHttpService({ baseUrl: server.origin, token: server.token });
    const info = await client.importModel('my anime.pth', new Uint8Array(await readFile(PTH)));
    expect(info).toMatchObject({
      name: 'custom:my-anime',
      title: 'my-anime',
      kind: 'custom',
      scale: 4,
      installed: true,
    });
    expect((await svc.listModels()).filter((m) => m.kind === 'custom').map((m) => m.name)).toEqual(['custom:my-anime']);
    // The uploaded file does not linger in the data folder once converted.
    expect(await readdir(path.join(dir, 'data', 'imports'))).toEqual([]);

    await svc.updateSettings({ model: 'custom:my-anime' });
    await client.removeModel('custom:my-anime');
    expect((await svc.listModels()).some((m) => m.kind === 'custom')).toBe(false);
    expect((await svc.getSettings()).model).not.toBe('custom:my-anime');
    await expect(client.removeModel('custom:my-anime')).rejects.toThrow(
      'custom:my-anime is not an imported model (it may have been removed already).',
    );
    await expect(client.removeModel('digital-art-4x')).rejects.toThrow(
      /only imported \(custom:\) models can be removed/,
    );
  });

  it('refuses what it cannot import in plain words, and opens the folder on the desktop', async () => {
    const client = createHttpService({ baseUrl: server.origin, token: server.token });
    await expect(client.importModel('notes.txt', new Uint8Array([1, 2, 3]))).rejects.toThrow(
      'notes.txt is not a model file Crisp can import (use .pth, .safetensors, .ckpt or .onnx; ncnn models with `crisp models import`).',
    );
    await expect(client.importModel('broken.pth', new Uint8Array([80, 75, 3, 4, 0, 0]))).rejects.toThrow(
      /^Could not import broken\.pth: /,
    );
    expect(await client.openModelsFolder()).toBe(true);
    expect(opened).toEqual([path.join(dir, 'models', 'custom')]);
  });
});

describe('model previews', () => {
  it('renders the sample crop ×4 with a real installed model once, then answers from the cache', async () => {
    const client = createHttpService({ baseUrl: server.origin, token: server.token });
    const first = await client.modelPreview('digital-art-4x');
    expect(first.mime).toBe('image/png');
    const meta = await sharp(Buffer.from(first.bytes)).metadata();
    expect([meta.width, meta.height]).toEqual([192, 192]);
    const cached = path.join(dir, 'data', 'previews', 'digital-art-4x.png');
    expect((await readFile(cached)).equals(Buffer.from(first.bytes))).toBe(true);
    expect(Buffer.from((await svc.modelPreview('digital-art-4x')).bytes).equals(Buffer.from(first.bytes))).toBe(true);
    await expect(client.modelPreview('nope')).rejects.toThrow('nope is not a model Crisp knows.');
  });

  it("previews on the person's own queued image: the centre 64 px, upscaled to 256 px, close to the original", async () => {
    const client = createHttpService({ baseUrl: server.origin, token: server.token });
    const bird = path.join(IMAGES_DIR, 'set5', 'bird.png'); // 288×288
    const [item] = await svc.addPaths([bird]);
    const before = await client.modelPreview('digital-art-4x', item!.id, 'before');
    const after = await client.modelPreview('digital-art-4x', item!.id);
    // The "before" is exactly the centre crop of the image.
    const centre = await sharp(bird).extract({ left: 112, top: 112, width: 64, height: 64 }).raw().toBuffer();
    const beforePixels = await sharp(Buffer.from(before.bytes)).raw().toBuffer({ resolveWithObject: true });
    expect([beforePixels.info.width, beforePixels.info.height]).toEqual([64, 64]);
    expect(beforePixels.data.equals(centre)).toBe(true);
    // The "after" is that crop through the model: 256 px, and shrunk back it matches the crop closely.
    const afterMeta = await sharp(Buffer.from(after.bytes)).metadata();
    expect([afterMeta.width, afterMeta.height]).toEqual([256, 256]);
    const shrunk = await sharp(Buffer.from(after.bytes)).resize(64, 64, { kernel: 'cubic' }).raw().toBuffer();
    let sum = 0;
    for (let i = 0; i < shrunk.length; i++) sum += Math.abs(shrunk[i]! - centre[i]!);
    expect(sum / shrunk.length).toBeLessThan(8);
    // Kept apart from the sample preview (made here too, so this test does not rely on the one above running
    // first), and a removed item is said in words.
    const sample = await svc.modelPreview('digital-art-4x');
    expect(Buffer.from(after.bytes).equals(Buffer.from(sample.bytes))).toBe(false);
    expect(
      Buffer.from(after.bytes).equals(await readFile(path.join(dir, 'data', 'previews', 'digital-art-4x.png'))),
    ).toBe(false);
    await svc.removeItem(item!.id);
    await expect(client.modelPreview('digital-art-4x', item!.id, 'before')).rejects.toThrow(
      'That image is no longer in the queue: choose another one.',
    );
  });
});

describe('output folder', () => {
  it('is checked when chosen: a relative path, a file or an unwritable place is refused in words', async () => {
    const file = path.join(dir, 'a-file.txt');
    await writeFile(file, 'not a folder');
    await expect(svc.updateSettings({ outputFolder: 'Pictures/out' })).rejects.toThrow(
      /^The output folder must be a full path \(for example .*\), not "Pictures\/out"\.$/,
    );
    await expect(svc.updateSettings({ outputFolder: file })).rejects.toThrow(
      `The output folder ${file} is a file, not a folder. Choose a folder.`,
    );
    await expect(svc.updateSettings({ outputFolder: path.join(file, 'below') })).rejects.toThrow(
      `Cannot use the output folder ${path.join(file, 'below')}: a part of that path is a file, not a folder. Choose another path.`,
    );
    // Under /proc, Node's recursive mkdir never returns: the guarded check answers at once, in words.
    if (process.platform === 'linux') {
      const t0 = performance.now();
      await expect(svc.updateSettings({ outputFolder: '/proc/x' })).rejects.toThrow(
        'Cannot use the output folder /proc/x: it (or a folder above it) does not exist, and it cannot be created there. Check the path.',
      );
      expect(performance.now() - t0).toBeLessThan(2_000);
    }
    const fresh = path.join(dir, 'results', 'new');
    expect((await svc.updateSettings({ outputFolder: fresh })).outputFolder).toBe(fresh);
    expect((await svc.updateSettings({ outputFolder: '' })).outputFolder).toBe('');
  });
});
