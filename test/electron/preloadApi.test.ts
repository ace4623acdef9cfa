/** window.crisp as the preload builds it: generated from SERVICE_METHODS, no channel names, errors unwrapped. */
import { describe, expect, it, vi } from 'vitest';
import type { ServiceEvent } from '../../app/service/crispService.js';
import { SERVICE_METHODS } from '../../app/service/methodTable.js';
import { buildDesktopApi, type PreloadTransport } from '../../electron/preload/buildDesktopApi.js';
import type { CallResult } from '../../electron/shared/ipcChannels.js';

function transport(answer: (method: string, args: unknown[]) => CallResult) {
  const emitters = new Set<(e: ServiceEvent) => void>();
  const t: PreloadTransport & { listens: number; stops: number; emit(e: ServiceEvent): void } = {
    listens: 0,
    stops: 0,
    callService: vi.fn(async (m: string, a: unknown[]) => answer(m, a)),
    callDesktop: vi.fn(async (m: string) => answer(m, [])),
    listen(fn) {
      t.listens++;
      emitters.add(fn);
      return () => {
        t.stops++;
        emitters.delete(fn);
      };
    },
    pathForFile: () => '/p/x.png',
    emit: (e) => emitters.forEach((fn) => fn(e)),
  };
  return t;
}

describe('preload API', () => {
  it('has exactly the service methods, subscribe and desktop: nothing that names a channel', () => {
    const api = buildDesktopApi(transport(() => ({ ok: true, value: null })));
    expect(Object.keys(api).sort()).toEqual([...SERVICE_METHODS, 'subscribe', 'desktop'].sort());
    expect(JSON.stringify(Object.keys(api))).not.toMatch(/crisp:|ipc|send|invoke/i);
    expect(Object.isFrozen(api)).toBe(true);
  });

  it('forwards calls with their arguments and turns error results into Errors', async () => {
    const t = transport((m, a) =>
      m === 'start'
        ? { ok: false, message: 'Insufficient credits', code: 'insufficient-credits' }
        : { ok: true, value: { m, a } },
    );
    const api = buildDesktopApi(t);
    expect(await api.addPaths(['/a.png'], { recursive: true })).toEqual({
      m: 'addPaths',
      a: [['/a.png'], { recursive: true }],
    });
    await expect(api.start()).rejects.toThrow(/^Insufficient credits$/);
    // The code rides on the Error, as over crisp ui's bridge.
    await expect(api.start()).rejects.toMatchObject({ code: 'insufficient-credits' });
    expect(await api.desktop.pickImages()).toEqual({ m: 'pickImages', a: [] });
    expect(api.desktop.pathForFile({} as File)).toBe('/p/x.png');
  });

  it('shares one event stream among subscribers and closes it after the last one', () => {
    const t = transport(() => ({ ok: true, value: null }));
    const api = buildDesktopApi(t);
    const a = vi.fn();
    const b = vi.fn();
    const offA = api.subscribe(a);
    const offB = api.subscribe(b);
    expect(t.listens).toBe(1);
    t.emit({ type: 'batchFinished', done: 1, failed: 0, total: 1 });
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(1);
    offA();
    expect(t.stops).toBe(0);
    offB();
    expect(t.stops).toBe(1);
  });
});
