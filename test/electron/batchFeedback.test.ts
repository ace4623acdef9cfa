/** Taskbar progress, end-of-batch notifications, the engine's utility process and the key store. */
import { EventEmitter } from 'node:events';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchMessage, followBatch } from '../../electron/main/batchFeedback.js';
import { createSafeStorageSecretStore } from '../../electron/main/safeStorageSecretStore.js';
import { createUtilityProcessSpawner, type UtilityChild } from '../../electron/main/utilityWorkerSpawner.js';
import { closeFakes, createFakeService } from '../renderer/fakeService.js';

afterEach(closeFakes);

describe('batch feedback', () => {
  it('shows batch progress on the taskbar and notifies when an unfocused batch ends', async () => {
    const fake = await createFakeService();
    const win = { setProgressBar: vi.fn(), isFocused: () => false, isDestroyed: () => false };
    const notify = vi.fn();
    const badges: number[] = [];
    followBatch(
      fake,
      () => win,
      notify,
      (n) => badges.push(n),
    );
    await fake.addPaths(await fake.images('a.png', 'b.png'));
    await fake.start();
    await fake.step(50);
    expect(win.setProgressBar).toHaveBeenLastCalledWith(0.25);
    await fake.finishAll();
    expect(win.setProgressBar).toHaveBeenLastCalledWith(-1);
    expect(notify).toHaveBeenCalledWith('Crisp: batch finished', '2 images upscaled.');
    // The badge counts the images still to do, and clears at the end.
    expect(badges).toEqual([2, 1, 0]);
  });

  it('does not pop up over a focused window, and words failures plainly', async () => {
    const fake = await createFakeService();
    const notify = vi.fn();
    followBatch(
      fake,
      () => ({ setProgressBar: () => undefined, isFocused: () => true, isDestroyed: () => false }),
      notify,
    );
    await fake.addPaths(await fake.images('a.png'));
    await fake.start();
    await fake.finishAll();
    expect(notify).not.toHaveBeenCalled();
    expect(batchMessage({ type: 'batchFinished', done: 1, failed: 2, total: 3 })).toBe('1 image upscaled, 2 failed.');
    expect(batchMessage({ type: 'batchFinished', done: 7, failed: 0, total: 20 })).toBe(
      '7 images upscaled, 13 stopped.',
    );
  });
});

describe('engine utility process', () => {
  it('adapts utilityProcess to the app layer’s WorkerSpawner', () => {
    const child = Object.assign(new EventEmitter(), { pid: 42, postMessage: vi.fn(), kill: vi.fn(() => true) });
    const fork = vi.fn(() => child as unknown as UtilityChild);
    const handle = createUtilityProcessSpawner(fork, '/app/out/electron/engineWorker.js').spawn();
    expect(fork).toHaveBeenCalledWith(
      '/app/out/electron/engineWorker.js',
      [],
      expect.objectContaining({ serviceName: 'Crisp engine' }),
    );
    handle.send({ type: 'cancel', id: 'j' });
    expect(child.postMessage).toHaveBeenCalledWith({ type: 'cancel', id: 'j' });
    const got = vi.fn();
    handle.onMessage(got);
    child.emit('message', { type: 'ready', devices: ['cpu'] });
    expect(got).toHaveBeenCalledWith({ type: 'ready', devices: ['cpu'] });
    const exit = vi.fn();
    handle.onExit(exit);
    child.emit('exit', 9);
    child.emit('exit', 9);
    expect(exit).toHaveBeenCalledTimes(1);
    expect(exit).toHaveBeenCalledWith({ code: 9, signal: null });
    handle.send({ type: 'shutdown' });
    expect(child.postMessage).toHaveBeenCalledTimes(1);
  });
});

describe('safeStorage secret store', () => {
  const xor = (b: Buffer) => Buffer.from(b.map((x) => x ^ 0x5a));
  const storage = (available: boolean) => ({
    isEncryptionAvailable: () => available,
    encryptString: (s: string) => xor(Buffer.from(s)),
    decryptString: (b: Buffer) => xor(b).toString(),
  });

  it('stores only ciphertext and reads it back', async () => {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'crisp-secrets-')), 'secrets.json');
    const store = createSafeStorageSecretStore(storage(true), file);
    await store.set('apiKey', 'k-very-secret');
    expect(await readFile(file, 'utf8')).not.toContain('k-very-secret');
    expect(await store.get('apiKey')).toBe('k-very-secret');
    await store.set('apiKey', null);
    expect(await store.get('apiKey')).toBeUndefined();
  });

  it('refuses to store in clear text when there is no keychain', async () => {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'crisp-secrets-')), 'secrets.json');
    await expect(createSafeStorageSecretStore(storage(false), file).set('apiKey', 'k')).rejects.toThrow(/no keychain/);
  });
});
