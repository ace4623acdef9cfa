/** Main's IPC end: trusted senders only, zod-checked arguments, errors as values, event forwarding. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  registerServiceIpc,
  type IpcEventLike,
  type IpcMainLike,
  type IpcSender,
} from '../../electron/main/serviceIpc.js';
import { IPC, type CallResult } from '../../electron/shared/ipcChannels.js';
import { createDragOut } from '../../electron/main/dragOut.js';
import { NO_API_KEY } from '../../app/service/backendSelection.js';
import { closeFakes, createFakeService, type FakeService } from '../renderer/fakeService.js';

class FakeIpcMain implements IpcMainLike {
  handlers = new Map<string, (event: IpcEventLike, ...args: unknown[]) => Promise<CallResult>>();
  listeners = new Map<string, (event: IpcEventLike, ...args: unknown[]) => void>();
  handle(channel: string, handler: (event: IpcEventLike, ...args: unknown[]) => Promise<CallResult>) {
    this.handlers.set(channel, handler);
  }
  on(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => void) {
    this.listeners.set(channel, listener);
  }
}

function sender(id = 1) {
  const s = {
    id,
    sent: [] as unknown[],
    destroyed: false,
    onDestroyed: [] as (() => void)[],
    send: (_channel: string, payload: unknown) => void s.sent.push(payload),
    isDestroyed: () => s.destroyed,
    once: (_e: 'destroyed', fn: () => void) => void s.onDestroyed.push(fn),
    drags: [] as { file: string; icon: unknown }[],
    startDrag: (item: { file: string; icon: never }) => void s.drags.push(item),
  };
  return s satisfies IpcSender;
}

const fromApp = (s = sender()): IpcEventLike => ({ sender: s, senderFrame: { url: 'app://crisp/index.html' } });

let ipc: FakeIpcMain;
let fake: FakeService;
const picked: string[] = [];

afterEach(closeFakes);

beforeEach(async () => {
  ipc = new FakeIpcMain();
  fake = await createFakeService();
  registerServiceIpc(ipc, fake, {
    pickImages: async () => {
      picked.push('images');
      return ['/a.png'];
    },
    pickInputFolder: async () => null,
    pickOutputFolder: async () => '/out',
    startDrag: createDragOut(fake, (file) => ({ icon: file })),
  });
});

const call = (event: IpcEventLike, method: unknown, args: unknown) => ipc.handlers.get(IPC.call)!(event, method, args);

describe('service IPC', () => {
  it('answers valid calls from the app page', async () => {
    expect(await call(fromApp(), 'updateSettings', [{ scale: 2 }])).toMatchObject({ ok: true, value: { scale: 2 } });
    expect(await ipc.handlers.get(IPC.desktop)!(fromApp(), 'pickImages')).toEqual({ ok: true, value: ['/a.png'] });
  });

  it('refuses calls from any other page or frame', async () => {
    for (const url of ['https://evil.example/', 'file:///tmp/x.html', 'app://other/']) {
      const r = await call({ sender: sender(), senderFrame: { url } }, 'getSettings', []);
      expect(r).toEqual({ ok: false, message: 'This call did not come from the Crisp window.' });
    }
    expect(await call({ sender: sender(), senderFrame: null }, 'getSettings', [])).toMatchObject({ ok: false });
  });

  it('validates every argument before the service sees it', async () => {
    const bad: [unknown, unknown][] = [
      ['updateSettings', [{ scale: 9 }]],
      ['updateSettings', [{ format: 'gif' }]],
      ['updateSettings', [{ version: 2 }]],
      ['updateSettings', [{ language: 'fr' }]],
      ['updateSettings', [{ passes: 3 }]],
      ['addPaths', ['/not-a-list']],
      ['addFile', ['x.png', 'not bytes']],
      ['readImage', ['id', 'thumbnail']],
      ['cancel', [42]],
      ['__proto__', []],
      ['subscribe', []],
      ['getSettings', 'not a list'],
    ];
    for (const [method, args] of bad) {
      const r = await call(fromApp(), method, args);
      expect(r.ok, `${String(method)} ${JSON.stringify(args)}`).toBe(false);
    }
    expect(fake.calls).toEqual([]);
    expect(await ipc.handlers.get(IPC.desktop)!(fromApp(), 'openDevTools')).toEqual({
      ok: false,
      message: 'Unknown desktop call.',
    });
  });

  it('returns the service’s errors as values with their own words', async () => {
    await fake.updateSettings({ mode: 'cloud' });
    // With the stable code beside the words, so the window can say it in its own language.
    expect(await call(fromApp(), 'getAccount', [])).toEqual({ ok: false, message: NO_API_KEY, code: 'unauthorized' });
  });

  it('forwards events to a subscribed window until it unsubscribes or is destroyed', async () => {
    const s = sender(7);
    ipc.listeners.get(IPC.subscribe)!(fromApp(s), true);
    await fake.addPaths(await fake.images('x.png'));
    expect(s.sent).toHaveLength(1);
    ipc.listeners.get(IPC.subscribe)!(fromApp(s), false);
    await fake.addPaths(await fake.images('y.png'));
    expect(s.sent).toHaveLength(1);
    ipc.listeners.get(IPC.subscribe)!(fromApp(s), true);
    s.onDestroyed.forEach((fn) => fn());
    await fake.addPaths(await fake.images('z.png'));
    expect(s.sent).toHaveLength(1);
  });

  it('drags out only a finished item’s own output file, named by id', async () => {
    const [item] = await fake.addPaths(await fake.images('drag.png'));
    const s = sender(3);
    const drag = (arg: unknown) => ipc.handlers.get(IPC.desktop)!(fromApp(s), 'startDrag', arg);
    expect(await drag(item!.id)).toEqual({ ok: true, value: false });
    await fake.start();
    await fake.finishAll();
    expect(await drag(item!.id)).toEqual({ ok: true, value: true });
    const output = fake.items[0]!.outputPath!;
    expect(s.drags).toEqual([{ file: output, icon: { icon: output } }]);
    expect(await drag({ file: '/etc/passwd' })).toEqual({ ok: false, message: 'Invalid desktop call.' });
    expect(await drag('no-such-id')).toEqual({ ok: true, value: false });
    expect(s.drags).toHaveLength(1);
  });
});
