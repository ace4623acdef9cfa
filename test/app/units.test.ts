import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorFromResponse, retryAfterMs } from '../../app/remote/responseErrors.js';
import { backoffDelay } from '../../app/remote/backoff.js';
import { decideOutput } from '../../app/jobs/outputNames.js';
import { DEFAULT_TEMPLATE, renderOutputName, templateProblem } from '../../engine/service/tasks/outputNames.js';
import type { SizeRequest } from '../../engine/contract/index.js';
import { jobOutputName, jobSettingsFrom } from '../../app/jobs/jobSettings.js';
import { expandInputs } from '../../app/jobs/inputs.js';
import { openSettingsStore } from '../../app/settings/settingsStore.js';
import { DEFAULT_SETTINGS } from '../../app/settings/settingsSchema.js';
import { createFileSecretStore } from '../../app/secrets/fileSecretStore.js';
import { resolveCliApiKey } from '../../app/secrets/apiKeySource.js';
import { estimateCredits } from '../../app/credits/estimate.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { BIRD, makeBatch } from './appHelpers.js';

let dir: string;
beforeAll(async () => {
  dir = await tempDir('crisp-app-unit-');
});
afterAll(async () => removeDir(dir));

describe('output names and overwrite policy', () => {
  it('renders the template and sanitises the model', () => {
    const parts = {
      originalFileName: '/x/My Photo.jpeg',
      model: 'custom:my-net',
      scale: 4 as const,
      format: 'webp' as const,
    };
    expect(renderOutputName('{name}_{model}_x{scale}.{ext}', parts)).toBe('My Photo_custom-my-net_x4.webp');
    expect(renderOutputName('{name}-big', parts)).toBe('My Photo-big.webp');
    // Everything that changes the pixels is in the name, so two runs never overwrite each other.
    expect(
      renderOutputName('{name}_{model}_x{scale}.{ext}', {
        ...parts,
        model: 'service-lite-4x',
        denoise: 0.5,
        face: { model: 'gfpgan-1.4', strength: 0.7 },
      }),
    ).toBe('My Photo_service-lite-4x-dn0.5-face-gfpgan-1.4-fs0.7_x4.webp');
    // Strength 1 is the plain model: the same image, so the same name as no --denoise at all.
    expect(renderOutputName('{name}_{model}_x{scale}.{ext}', { ...parts, model: 'service-lite-4x', denoise: 1 })).toBe(
      'My Photo_service-lite-4x_x4.webp',
    );
    expect(templateProblem('{name}.{ext}')).toBeUndefined();
    expect(templateProblem('out.{ext}')).toMatch(/must contain \{name\}/);
    expect(templateProblem('{name}/{ext}')).toMatch(/not a path/);
  });

  it('an exact size is named by the size, not by the scale it did not ask for (issue 41)', () => {
    const parts = { originalFileName: 'photo.jpg', model: 'digital-art-4x', scale: 4 as const, format: 'png' as const };
    const name = (request: SizeRequest, output?: { width: number; height: number }) =>
      renderOutputName(DEFAULT_TEMPLATE, { ...parts, size: { request, ...(output ? { output } : {}) } });
    // The output's size when the input's is known (the queue read it when the image was added) …
    expect(name({ width: 1000 }, { width: 1000, height: 667 })).toBe('photo_digital-art-4x_1000x667.png');
    // … else the request itself (a watched folder names an arrival before reading it).
    expect([
      name({ width: 1000 }),
      name({ height: 800 }),
      name({ width: 1920, height: 1080 }),
      name({ longSide: 2000 }),
    ]).toEqual([
      'photo_digital-art-4x_w1000.png',
      'photo_digital-art-4x_h800.png',
      'photo_digital-art-4x_fit1920x1080.png',
      'photo_digital-art-4x_long2000.png',
    ]);
    // A template without "x{scale}" is left as written; a scale run names as before.
    expect(renderOutputName('{name}-web.{ext}', { ...parts, size: { request: { width: 1000 } } })).toBe(
      'photo-web.png',
    );
    expect(renderOutputName(DEFAULT_TEMPLATE, parts)).toBe('photo_digital-art-4x_x4.png');
    // The queue's namer: the settings' size and the input's dimensions.
    const settings = {
      ...jobSettingsFrom(DEFAULT_SETTINGS, 'local'),
      model: 'digital-art-4x',
      width: 100,
      scale: 4 as const,
    };
    expect(jobOutputName(settings, '/in/wide.png', { width: 72, height: 50 })).toBe('wide_digital-art-4x_100x69.png');
  });

  it('skip, replace, keep both', async () => {
    await writeFile(path.join(dir, 'a.png'), 'x');
    await writeFile(path.join(dir, 'a-2.png'), 'x');
    expect(await decideOutput(dir, 'a.png', 'skip')).toEqual({ action: 'skip', path: path.join(dir, 'a.png') });
    expect(await decideOutput(dir, 'a.png', 'replace')).toEqual({ action: 'write', path: path.join(dir, 'a.png') });
    expect(await decideOutput(dir, 'a.png', 'keep')).toEqual({ action: 'write', path: path.join(dir, 'a-3.png') });
    expect(await decideOutput(dir, 'new.png', 'skip')).toEqual({ action: 'write', path: path.join(dir, 'new.png') });
  });

  it('folders keep only supported images (by content), recursively on request', async () => {
    const d = path.join(dir, 'tree');
    await mkdir(path.join(d, 'deep'), { recursive: true });
    await makeBatch(path.join(d, 'deep'), 1);
    await writeFile(path.join(d, 'fake.png'), 'not a png');
    await writeFile(path.join(d, 'renamed.dat'), await readFile(BIRD));
    expect((await expandInputs([d], false)).map((e) => path.relative(d, e.path))).toEqual(['renamed.dat']);
    expect((await expandInputs([d], true)).map((e) => path.relative(d, e.path))).toEqual([
      'deep/img01_baby_LRBI_x4.png',
      'renamed.dat',
    ]);
    expect(await expandInputs([path.join(d, 'fake.png')], false)).toEqual([
      {
        path: path.join(d, 'fake.png'),
        problem: 'fake.png is not a JPG, PNG or WEBP image.',
        problemCode: 'not-an-image',
      },
    ]);
  });
});

describe('settings', () => {
  it('persist, validate, and salvage a damaged file field by field', async () => {
    const file = path.join(dir, 'settings.json');
    const s = await openSettingsStore(file);
    expect(await s.get()).toEqual(DEFAULT_SETTINGS);
    await s.update({ scale: 2, theme: 'dark', language: 'de', passes: 2 });
    await expect(s.update({ language: 'fr' } as never)).rejects.toThrow(/^Invalid setting language/);
    await expect(s.update({ compression: 101 })).rejects.toThrow(/^Invalid setting compression/);
    await expect(s.update({ apiKey: 'k' } as never)).rejects.toThrow(/Invalid setting/);
    await expect(s.update({ baseUrl: 'ftp://x' })).rejects.toThrow(/baseUrl: must be an http\(s\) URL/);
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
      version: 1,
      scale: 2,
      theme: 'dark',
      language: 'de',
      passes: 2,
      compression: 0,
    });
    await writeFile(file, JSON.stringify({ version: 1, scale: 'huge', theme: 'dark', model: 'custom:mine' }));
    const again = await (await openSettingsStore(file)).get();
    expect([again.scale, again.theme, again.model]).toEqual([DEFAULT_SETTINGS.scale, 'dark', 'custom:mine']);
    // A file from before the language and passes settings gets their defaults.
    expect([again.language, again.passes]).toEqual(['system', 1]);
  });

  it('file secret store is 0600 and keeps nothing else', async () => {
    const file = path.join(dir, 'sec', 'secrets.json');
    const store = createFileSecretStore(file);
    expect(await store.get('apiKey')).toBeUndefined();
    await store.set('apiKey', 'k-123');
    expect(await store.get('apiKey')).toBe('k-123');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    await store.set('apiKey', null);
    expect(await store.get('apiKey')).toBeUndefined();
    await writeFile(path.join(dir, 'k.txt'), ' key-from-file \nsecond line');
    expect(await resolveCliApiKey(path.join(dir, 'k.txt'), {})).toBe('key-from-file');
    expect(await resolveCliApiKey(undefined, { CRISP_API_KEY: 'env-key' })).toBe('env-key');
  });
});

describe('errors, backoff, estimates', () => {
  it('maps statuses to catalog codes with the server message', () => {
    const h = {};
    expect(errorFromResponse(402, '"Insufficient credits"', h)).toMatchObject({
      code: 'insufficient-credits',
      message: 'Insufficient credits',
    });
    expect(errorFromResponse(400, '"Bad Request: Missing User ID"', h)).toMatchObject({
      code: 'unauthorized',
      status: 400,
    });
    expect(errorFromResponse(404, '"Task not found"', h)).toMatchObject({
      code: 'not-found',
      message: 'Task not found',
    });
    expect(errorFromResponse(500, '"Error getting data"', h)).toMatchObject({
      code: 'server-error',
      message: 'Error getting data',
    });
    expect(errorFromResponse(502, '<html>bad gateway</html>', h)).toMatchObject({
      code: 'server-error',
      message: '<html>bad gateway</html>',
    });
    expect(errorFromResponse(429, '"Too Many Requests"', { 'retry-after': '7' })).toMatchObject({
      code: 'rate-limited',
      retryAfterMs: 7000,
    });
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
  });

  it('backoff grows, is capped and jittered', () => {
    const p = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 };
    expect([0, 1, 2, 5].map((a) => backoffDelay(p, a, () => 0))).toEqual([100, 200, 400, 1000]);
    expect(backoffDelay(p, 5, () => 1)).toBe(500);
  });

  it('local is free; cloud follows the price table', () => {
    expect(estimateCredits('local', { scale: 8, face: { model: null } }, 5)).toEqual({
      mode: 'local',
      credits: 0,
      items: 5,
    });
    expect(estimateCredits('cloud', { scale: 4 }, 5)).toEqual({
      mode: 'cloud',
      credits: 10,
      items: 5,
    });
    expect(estimateCredits('cloud', { scale: 8, face: { model: null } }, 2)).toEqual({
      mode: 'cloud',
      credits: 10,
      items: 2,
    });
  });
});
