/**
 * The job runner's guarantees that the app relies on (issue 17): an unusable output folder fails the item
 * with a sentence and never hangs (Node's recursive mkdir spins forever under /proc); Stop ends an item
 * whose backend never answers; errors are mapped to sentences with stable codes in one place; the option
 * declaration drives the settings checks, the IPC checks and the UI's ranges.
 */
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpscaleBackend } from '../../app/backends/backend.js';
import { crispError } from '../../engine/contract/errorCatalog.js';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import { jobSettingsFrom } from '../../app/jobs/jobSettings.js';
import { toUserError } from '../../app/jobs/userErrors.js';
import { openSettingsStore } from '../../app/settings/settingsStore.js';
import { optionControl, UPSCALE_DEFAULTS } from '../../app/settings/upscaleOptions.js';
import { parseServiceArgs } from '../../app/service/serviceArgs.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { BIRD } from './appHelpers.js';

/** A backend whose upscale never settles and ignores the signal, like a step stuck in the OS. */
function stuckBackend(): UpscaleBackend & { calls: number } {
  const b = {
    mode: 'local' as const,
    calls: 0,
    upscale: () => {
      b.calls++;
      return new Promise<never>(() => undefined);
    },
    estimate: async () => 0,
    getAccount: async () => ({ available: false }),
    close: async () => undefined,
  };
  return b;
}

describe('job runner safety', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-jobsafety-');
  });
  afterAll(async () => removeDir(dir));

  it('an output folder under /proc fails the item with a sentence, before the backend is asked', async () => {
    const backend = stuckBackend();
    const queue = await JobQueue.open({
      backend: () => backend,
      settings: () => jobSettingsFrom({ ...UPSCALE_DEFAULTS, outputFolder: '/proc/crisp-nope/out' }, 'local'),
    });
    await queue.addPaths([BIRD]);
    await queue.start();
    await queue.idle();
    const [item] = queue.snapshot().items;
    expect(item?.status).toBe('failed');
    expect(item?.errorCode).toBe('not-found');
    expect(item?.error).toBe(
      'Cannot use the output folder /proc/crisp-nope/out: it (or a folder above it) does not exist, and it cannot be created there. Check the path.',
    );
    expect(backend.calls).toBe(0);
  });

  it('Stop ends an item whose backend never answers, and nothing is left in the output folder', async () => {
    const out = path.join(dir, 'stuck-out');
    const backend = stuckBackend();
    const queue = await JobQueue.open({
      backend: () => backend,
      settings: () => jobSettingsFrom({ ...UPSCALE_DEFAULTS, outputFolder: out }, 'local'),
    });
    await queue.addPaths([BIRD]);
    const started = new Promise<void>((resolve) => {
      const poll = () => (backend.calls > 0 ? resolve() : setTimeout(poll, 10));
      poll();
    });
    await queue.start();
    await started;
    await queue.cancel();
    await queue.idle();
    expect(queue.snapshot().items.map((i) => i.status)).toEqual(['cancelled']);
    expect(await readdir(out)).toEqual([]);
  });

  it('a shutdown puts the item back in the queue (typed reason, not a message)', async () => {
    const backend = stuckBackend();
    const queue = await JobQueue.open({
      backend: () => backend,
      settings: () => jobSettingsFrom({ ...UPSCALE_DEFAULTS, outputFolder: path.join(dir, 'o2') }, 'local'),
    });
    await queue.addPaths([BIRD]);
    await queue.start();
    while (backend.calls === 0) await new Promise((r) => setTimeout(r, 10));
    await queue.close();
    expect(queue.snapshot().items.map((i) => i.status)).toEqual(['queued']);
  });

  it('maps filesystem and network errors to sentences naming the path or service, with stable codes', () => {
    const errno = (code: string) => Object.assign(new Error(`${code}: raw text, open '/tmp/crisp-x/.tmp'`), { code });
    const cases: [string, string, RegExp][] = [
      [
        'ENOENT',
        'not-found',
        /^Cannot write the output \/home\/ana\/out\.png: it \(or a folder above it\) does not exist/,
      ],
      ['EACCES', 'permission-denied', /permission denied\. Choose a folder you can write to/],
      ['EISDIR', 'is-a-folder', /it is a folder, not a file/],
      ['ENOTDIR', 'not-a-folder', /a part of that path is a file/],
      ['EROFS', 'read-only', /read-only disk/],
      ['ENOSPC', 'disk-full', /the disk is full/],
      ['EMFILE', 'too-many-open-files', /too many files are open/],
    ];
    for (const [code, expected, sentence] of cases) {
      const u = toUserError(errno(code), { path: '/home/ana/out.png', action: 'write the output' });
      expect(u.code).toBe(expected);
      expect(u.message).toMatch(sentence);
      expect(u.message).not.toContain(code);
      expect(u.message).not.toContain('/tmp/crisp-x');
    }
    // undici wraps socket errors: the code is found in the cause.
    const refused = toUserError(new TypeError('fetch failed', { cause: errno('ECONNREFUSED') }), {
      service: 'http://gpu-box:8787',
    });
    expect([refused.code, refused.message]).toEqual([
      'connection-refused',
      'Cannot reach http://gpu-box:8787: the connection was refused. Check the URL and that the service is running.',
    ]);
    expect(toUserError(errno('ETIMEDOUT'), { service: 'http://gpu-box:8787' }).code).toBe('timed-out');
    expect(toUserError(errno('ENOTFOUND'), { service: 'https://upscale.example' }).code).toBe('host-not-found');
    const credits = toUserError(crispError('insufficient-credits'));
    expect([credits.code, credits.message]).toEqual(['insufficient-credits', 'Insufficient credits']);
  });

  it('settings, IPC payloads and UI controls follow the one option declaration', async () => {
    await mkdir(path.join(dir, 'settings'), { recursive: true });
    const store = await openSettingsStore(path.join(dir, 'settings', 'settings.json'));
    const s = await store.get();
    expect([s.faceModel, s.faceStrength, s.precision]).toEqual([null, 1, 'auto']);
    await expect(store.update({ model: 'digtal-art-4x' })).rejects.toThrow(
      "Invalid setting model: Unknown model 'digtal-art-4x'. Did you mean 'digital-art-4x'?",
    );
    await expect(store.update({ faceStrength: 1.5 })).rejects.toThrow(
      'Invalid setting faceStrength: must be a number from 0 to 1',
    );
    expect((await store.update({ precision: 'int8', faceModel: 'custom:my-gfpgan' })).precision).toBe('int8');
    expect(() => parseServiceArgs('updateSettings', [{ precision: 'fp8' }])).toThrow(/invalid arguments/);
    expect(parseServiceArgs('updateSettings', [{ tileSize: 256, faceStrength: 0.5 }])).toEqual([
      { tileSize: 256, faceStrength: 0.5 },
    ]);
    expect(optionControl('scale')).toMatchObject({ kind: 'range', min: 1, max: 8, step: 1, default: 4 });
    expect(optionControl('faceStrength')).toMatchObject({ kind: 'range', min: 0, max: 1, default: 1 });
    expect(optionControl('precision')).toMatchObject({
      kind: 'choice',
      choices: ['auto', 'fp32', 'int8', 'fp16'],
      default: 'auto',
    });
    expect(optionControl('overwrite')).toMatchObject({ kind: 'choice', choices: ['skip', 'replace', 'keep'] });
  });
});
