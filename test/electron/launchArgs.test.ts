/**
 * Files and folders given to the desktop app: the real electron/main/main.ts loaded against the fake Electron
 * and the real app layer. A second launch's files are added to the running window's queue (folders expanded),
 * `--preset` chooses that preset and starts; macOS open-file events before 'ready' are kept and added once the
 * app is up; an unknown preset is refused in words and adds nothing. parseLaunchArgs is checked on its own too.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { QueueSnapshot, Settings } from '../../app/service/crispService.js';
import { parseLaunchArgs } from '../../electron/main/launchArgs.js';
import { IPC, type CallResult } from '../../electron/shared/ipcChannels.js';
import { FakeBrowserWindow, electronState } from './fakeElectron.js';

vi.mock('electron', async () => (await import('./fakeElectron.js')).electronModule);

const fromApp = {
  sender: { id: 1, send() {}, isDestroyed: () => false, once() {} },
  senderFrame: { url: 'app://crisp/index.html' },
};

async function call<T>(method: string, ...args: unknown[]): Promise<T> {
  const r = (await electronState.ipcHandlers.get(IPC.call)!(fromApp, method, args)) as CallResult;
  if (!r.ok) throw new Error(r.message);
  return r.value as T;
}

let dir: string;
let early: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-launch-'));
  process.env.CRISP_RESOURCES_DIR = path.resolve('resources');
  process.env.CRISP_PRESETS_FILE = path.join(dir, 'presets.json');
  early = path.join(dir, 'early.png');
  await sharp({ create: { width: 8, height: 8, channels: 3, background: '#345' } })
    .png()
    .toFile(early);
  await import('../../electron/main/main.js');
  // macOS may deliver open-file before the app is ready: it must not be lost.
  let defaulted = false;
  electronState.app.emit('open-file', { preventDefault: () => (defaulted = true) }, early);
  expect(defaulted).toBe(true);
  electronState.app.readyResolve();
  await vi.waitFor(() => expect(FakeBrowserWindow.instances).toHaveLength(1), { timeout: 20_000 });
});

afterAll(() => {
  electronState.app.emit('before-quit', { preventDefault() {} });
});

describe('files given to the desktop app', () => {
  it('parses a launch: paths against its working directory, --preset, --upscale, Chromium switches ignored', () => {
    expect(parseLaunchArgs(['/opt/Crisp/crisp', 'a.jpg', '--no-sandbox', 'sub/b.png'], '/home/ada', true)).toEqual({
      paths: ['/home/ada/a.jpg', '/home/ada/sub/b.png'],
      start: false,
    });
    expect(parseLaunchArgs(['electron', '.', '--preset', 'Photos', '/x/c.webp'], '/w', false)).toEqual({
      paths: ['/x/c.webp'],
      preset: 'Photos',
      start: true,
    });
    expect(parseLaunchArgs(['crisp', '--preset=Print ×2 lossless', '--upscale', '--', '-odd.png'], '/w', true)).toEqual(
      {
        paths: ['/w/-odd.png'],
        preset: 'Print ×2 lossless',
        start: true,
      },
    );
    expect(parseLaunchArgs(['crisp', '-psn_0_12345'], '/w', true)).toEqual({ paths: [], start: false });
  });

  it("adds what came before ready, then a second launch's files and expanded folders, and applies its preset", async () => {
    await vi.waitFor(async () => expect((await call<QueueSnapshot>('getQueue')).items).toHaveLength(1), {
      timeout: 20_000,
    });
    expect((await call<QueueSnapshot>('getQueue')).items[0]).toMatchObject({ inputPath: early, status: 'queued' });

    const cwd = path.join(dir, 'launch');
    await mkdir(path.join(cwd, 'album', 'nested'), { recursive: true });
    const px = (c: string) => sharp({ create: { width: 8, height: 8, channels: 3, background: c } });
    await px('#111').jpeg().toFile(path.join(cwd, 'one.jpg'));
    await px('#222')
      .png()
      .toFile(path.join(cwd, 'album', 'two.png'));
    await px('#333')
      .webp()
      .toFile(path.join(cwd, 'album', 'nested', 'three.webp'));
    await writeFile(path.join(cwd, 'album', 'notes.txt'), 'not an image');

    const focusedBefore = window().focused;
    electronState.app.emit(
      'second-instance',
      {},
      ['crisp-desktop', '.', 'one.jpg', 'album', '--preset', 'print ×2 lossless'],
      cwd,
    );
    await vi.waitFor(async () => expect((await call<QueueSnapshot>('getQueue')).items).toHaveLength(4), {
      timeout: 20_000,
    });
    expect(window().focused).toBe(focusedBefore + 1);
    const q = await call<QueueSnapshot>('getQueue');
    expect(q.items.map((i) => path.relative(dir, i.inputPath)).sort()).toEqual(
      ['early.png', 'launch/album/nested/three.webp', 'launch/album/two.png', 'launch/one.jpg'].sort(),
    );
    // The preset's options are the settings now, and it is the chosen one.
    const s = await call<Settings>('getSettings');
    expect([s.model, s.scale, s.format, s.compression]).toEqual(['service-lite-4x', 2, 'png', 0]);
    expect((await call<{ chosen: string }>('listPresets')).chosen).toBe('Print ×2 lossless');
    // And the queue was started: the fake Electron has no utility process, so the items were attempted and failed.
    await vi.waitFor(async () =>
      expect((await call<QueueSnapshot>('getQueue')).items.every((i) => i.status !== 'queued')).toBe(true),
    );
    expect(electronState.forks.length).toBeGreaterThan(0);
  });

  it('refuses an unknown preset in words and adds nothing', async () => {
    const n = (await call<QueueSnapshot>('getQueue')).items.length;
    const errors = electronState.errors.length;
    electronState.app.emit('second-instance', {}, ['crisp-desktop', '.', early, '--preset', 'Posters'], dir);
    await vi.waitFor(() => expect(electronState.errors.length).toBe(errors + 1));
    expect(electronState.errors.at(-1)).toMatch(/^There is no preset named "Posters"\./);
    expect((await call<QueueSnapshot>('getQueue')).items).toHaveLength(n);
  });
});

const window = () => FakeBrowserWindow.instances[0]!;
